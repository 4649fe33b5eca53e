# ruff: noqa: ASYNC240 -- the tests build their tmp_path trees directly
import os
from pathlib import Path

import pytest

from loopd.protocol.errors import ToolInputError
from loopd.tools import LocalFiles, ToolEnv
from loopd.tools.access import NotText


async def test_paths_resolve_against_the_cwd_and_through_symlinks(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "pkg").mkdir(parents=True)
    (tmp_path / "link").symlink_to(real)
    env = ToolEnv(roots=(str(tmp_path / "link"), "/"))
    canonical = os.path.realpath(real)
    assert env.roots == (canonical, "/")
    assert env.cwd == canonical
    assert env.resolve("pkg/../pkg/a.py") == f"{canonical}/pkg/a.py"
    assert env.resolve(f"{tmp_path}/link/pkg") == f"{canonical}/pkg"
    assert env.resolve("missing/new.py") == f"{canonical}/missing/new.py"
    assert env.display(f"{canonical}/pkg/a.py") == "pkg/a.py"
    assert env.display(canonical) == "."
    assert env.display("/etc/hosts") == "/etc/hosts"
    assert env.display(canonical + "-sibling/x") == canonical + "-sibling/x"
    await env.aclose()


@pytest.mark.parametrize("path", ["", "   ", "a\0b"])
async def test_unusable_paths_are_bad_input(tmp_path: Path, path: str) -> None:
    env = ToolEnv(roots=(str(tmp_path),))
    with pytest.raises(ToolInputError):
        env.resolve(path)
    await env.aclose()


def test_an_env_needs_a_root() -> None:
    with pytest.raises(ValueError, match="at least one root"):
        ToolEnv(roots=())


async def test_local_files_write_parents_and_refuse_non_utf8(tmp_path: Path) -> None:
    files = LocalFiles()
    target = str(tmp_path / "x" / "y" / "z.txt")
    await files.write_text(target, "héllo\n")
    assert await files.read_text(target) == "héllo\n"
    (tmp_path / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(NotText):
        await files.read_text(str(tmp_path / "latin1.txt"))

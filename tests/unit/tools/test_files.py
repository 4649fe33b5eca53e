# ruff: noqa: ASYNC240 -- the tests set up and inspect real files in tmp_path
"""`BeneathFiles`: the path policy applied at the moment of use, and the per-call
grants that let an approved path outside the roots through, for that call only."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopd.engine.ports import ToolCall
from loopd.policy.beneath import PathEscapeError
from loopd.policy.grants import CallGrants, Grant
from loopd.policy.paths import PathPolicy, PathVerdict
from loopd.tools import ToolEnv, ToolRegistry
from loopd.tools.access import FileTooLarge, PathRefused
from loopd.tools.files import BeneathFiles


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path, Path]:
    ws, outside, home = tmp_path / "ws", tmp_path / "outside", tmp_path / "home"
    for d in (ws, outside, home / ".ssh", ws / ".git" / "hooks"):
        d.mkdir(parents=True)
    (ws / "a.txt").write_text("inside\n")
    (ws / ".env").write_text("TOKEN=s3cret\n")
    (outside / "b.txt").write_text("outside\n")
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY\n")
    return ws, outside, home


def files_for(ws: Path, home: Path, **caps: int) -> BeneathFiles:
    return BeneathFiles(PathPolicy((str(ws.resolve()),), str(home.resolve())), **caps)


async def test_reads_and_writes_inside_the_roots(layout: tuple[Path, Path, Path]) -> None:
    ws, _, home = layout
    files = files_for(ws, home)
    assert await files.read_text(str(ws / "a.txt")) == "inside\n"
    await files.write_text(str(ws / "new" / "dir" / "c.txt"), "made\n")
    assert (ws / "new" / "dir" / "c.txt").read_text() == "made\n"


@pytest.mark.parametrize("name", [".env", "home/.ssh/id_rsa", "/proc/self/environ"])
async def test_secrets_are_never_read_even_with_a_grant(
    layout: tuple[Path, Path, Path], name: str
) -> None:
    ws, _, home = layout
    path = str(home / ".ssh" / "id_rsa") if name.startswith("home") else str(ws / name)
    path = name if name.startswith("/") else path  # the kernel's: the environment, the key
    grants = CallGrants()
    grants.record("c", Grant(paths=frozenset({os.path.realpath(path)})))
    with grants.running("c"), pytest.raises(PathRefused, match="loopd never reads it"):
        await files_for(ws, home).read_text(path)


async def test_outside_the_roots_needs_this_calls_grant(layout: tuple[Path, Path, Path]) -> None:
    ws, outside, home = layout
    files, target = files_for(ws, home), str((outside / "b.txt").resolve())
    with pytest.raises(PathRefused, match="outside the session's folders; this call was not"):
        await files.read_text(target)
    grants = CallGrants()
    grants.record("c", Grant(paths=frozenset({target})))
    with grants.running("c"):
        assert await files.read_text(target) == "outside\n"
        await files.write_text(target, "approved\n")
    assert (outside / "b.txt").read_text() == "approved\n"
    with grants.running("c"), pytest.raises(PathRefused):  # a grant is used by one run
        await files.read_text(target)


async def test_a_grant_names_exact_paths_not_their_folder(
    layout: tuple[Path, Path, Path],
) -> None:
    ws, outside, home = layout
    grants = CallGrants()
    grants.record("c", Grant(paths=frozenset({str((outside / "b.txt").resolve())})))
    with grants.running("c"), pytest.raises(PathRefused):
        await files_for(ws, home).write_text(str(outside / "other.txt"), "x")
    assert not (outside / "other.txt").exists()


async def test_protected_writes_inside_the_roots_need_a_grant(
    layout: tuple[Path, Path, Path],
) -> None:
    ws, _, home = layout
    hook = str(ws / ".git" / "hooks" / "pre-commit")
    with pytest.raises(PathRefused, match=r"\.git/ is protected"):
        await files_for(ws, home).write_text(hook, "#!/bin/sh\n")
    assert not os.path.exists(hook)
    grants = CallGrants()
    grants.record("c", Grant(paths=frozenset({hook})))
    with grants.running("c"):
        await files_for(ws, home).write_text(hook, "#!/bin/sh\n")
    assert Path(hook).read_text() == "#!/bin/sh\n"


async def test_a_symlink_leading_out_is_judged_by_its_target(
    layout: tuple[Path, Path, Path],
) -> None:
    ws, outside, home = layout
    (ws / "link").symlink_to(outside)
    with pytest.raises(PathRefused, match="outside"):
        await files_for(ws, home).write_text(str(ws / "link" / "x.txt"), "pwn")
    assert not (outside / "x.txt").exists()


class SwappingPolicy(PathPolicy):
    """Replaces `ws/sub` with a symlink to `outside` right after judging a path, as a
    racing process would between the check and the open."""

    def check_write(self, path: str) -> PathVerdict:
        verdict = super().check_write(path)
        sub = os.path.join(self.roots[0], "sub")
        os.rename(sub, sub + ".old")
        os.symlink(self.home, sub)  # `home` stands for somewhere outside
        return verdict


async def test_a_symlink_swapped_in_after_the_check_cannot_escape(tmp_path: Path) -> None:
    ws, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    (ws / "sub").mkdir(parents=True)
    elsewhere.mkdir()
    files = BeneathFiles(SwappingPolicy((str(ws),), str(elsewhere)))
    with pytest.raises(PathEscapeError):
        await files.write_text(str(ws / "sub" / "x.txt"), "pwn")
    assert list(elsewhere.iterdir()) == []


async def test_size_caps(layout: tuple[Path, Path, Path]) -> None:
    ws, _, home = layout
    files = files_for(ws, home, max_read_bytes=4, max_write_bytes=4)
    with pytest.raises(FileTooLarge):
        await files.read_text(str(ws / "a.txt"))
    with pytest.raises(FileTooLarge):
        await files.write_text(str(ws / "b.txt"), "too long")
    assert not (ws / "b.txt").exists()


async def test_the_registry_reports_refusals_with_their_reason(
    layout: tuple[Path, Path, Path],
) -> None:
    ws, outside, home = layout
    env = ToolEnv(roots=(str(ws),), files=files_for(ws, home))
    tools = ToolRegistry(env)
    call = ToolCall("w1", "write", {"path": str(outside / "x.txt"), "content": "pwn"})
    declaration = await tools.declare(call)
    assert declaration.title == f"Write {outside.resolve() / 'x.txt'}"  # unread yet
    result = await tools.run(call, _ignore)
    assert result.is_error
    assert result.output.startswith("Refused: ")
    assert "outside the session's folders" in result.output
    env.grants.record("w1", Grant(paths=frozenset({str((outside / "x.txt").resolve())})))
    assert not (await tools.run(call, _ignore)).is_error
    assert (outside / "x.txt").read_text() == "pwn"
    await env.aclose()


async def test_a_write_preview_of_a_path_not_yet_readable_shows_no_old_text(
    layout: tuple[Path, Path, Path],
) -> None:
    ws, outside, home = layout
    env = ToolEnv(roots=(str(ws),), files=files_for(ws, home))
    call = ToolCall("w1", "write", {"path": str(outside / "b.txt"), "content": "new"})
    declaration = await ToolRegistry(env).declare(call)
    assert declaration.title.startswith("Write ")
    edit = ToolCall("e1", "edit", {"path": ".env", "old_string": "a", "new_string": "b"})
    assert (await ToolRegistry(env).declare(edit)).preview == ()
    await env.aclose()


async def _ignore(content: object) -> None:
    return None


_SEGMENT = st.sampled_from(["a", "b", "..", ".", "link", "out", ".env", ".git", "hooks"])


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(parts=st.lists(_SEGMENT, min_size=1, max_size=6))
async def test_property_nothing_outside_the_root_is_touched_without_a_grant(
    tmp_path_factory: pytest.TempPathFactory, parts: list[str]
) -> None:
    base = tmp_path_factory.mktemp("p")
    ws, outside = base / "ws", base / "out"
    (ws / "a" / "b").mkdir(parents=True)
    outside.mkdir()
    (ws / "link").symlink_to(outside)
    (ws / "a" / "out").symlink_to(outside)
    files = BeneathFiles(PathPolicy((str(ws),), str(base / "home")))
    with contextlib.suppress(OSError):
        await files.write_text(str(ws.joinpath(*parts)), "x")
    assert list(outside.iterdir()) == []
    assert not (ws / ".git" / "hooks").exists() or not any((ws / ".git" / "hooks").iterdir())
    assert not (base / "x").exists()

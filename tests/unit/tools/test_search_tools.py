import os
import shutil
from pathlib import Path

import pytest
from tooltest import Call, RecordingProgress

from loopd.engine.ports import ToolCall, ToolResult
from loopd.policy.reading import DiskReader
from loopd.protocol.errors import ToolInputError
from loopd.protocol.events import Location
from loopd.tools import ToolEnv, ToolLimits, ToolRegistry
from loopd.tools.grep import Grep

RG = shutil.which("rg")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    files = {
        "a.txt": "alpha\nBeta\nalphabet\n",
        "a/b.txt": "alpha in a/b\n",
        "b.py": "x = 'alpha'\n",
        "sub/deep/d.py": "ALPHA\n",
        ".hidden/c.txt": "alpha\n",
        ".secret.txt": "alpha\n",
        ".git/config.py": "alpha\n",
        "wide.txt": "alpha " + "w" * 400 + "\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "bin.dat").write_bytes(b"alpha\x00\x01\x02")
    return tmp_path


@pytest.fixture(params=["ripgrep", "python"])
def grep(request: pytest.FixtureRequest, env: ToolEnv) -> ToolRegistry:
    if request.param == "ripgrep" and RG is None:
        pytest.skip("ripgrep (rg) is not on PATH; CI installs it via scripts/setup.sh")
    return ToolRegistry(env, [Grep(RG if request.param == "ripgrep" else None)])


async def run_grep(tools: ToolRegistry, **args: object) -> ToolResult:
    return await tools.run(ToolCall("c1", "grep", args), RecordingProgress())


async def test_grep_lists_matches_in_path_order_skipping_hidden_and_binary(
    grep: ToolRegistry, tree: Path
) -> None:
    result = await run_grep(grep, pattern="alpha")
    assert result.output.splitlines()[:4] == [
        "a/b.txt:1: alpha in a/b",
        "a.txt:1: alpha",
        "a.txt:3: alphabet",
        "b.py:1: x = 'alpha'",
    ]
    assert result.output.splitlines()[4] == "wide.txt:1: alpha " + "w" * 294 + " [...]"
    assert len(result.output.splitlines()) == 5
    assert not result.is_error


async def test_grep_case_flag_glob_filter_and_file_path(grep: ToolRegistry, tree: Path) -> None:
    result = await run_grep(grep, pattern="alpha", case_insensitive=True, glob="*.py")
    assert result.output == "b.py:1: x = 'alpha'\nsub/deep/d.py:1: ALPHA"
    result = await run_grep(grep, pattern="^alpha", path="a.txt")
    assert result.output == "a.txt:1: alpha\na.txt:3: alphabet"
    result = await run_grep(grep, pattern="alpha", path="sub", case_insensitive=True)
    assert result.output == "sub/deep/d.py:1: ALPHA"


async def test_grep_caps_matches_and_says_there_are_more(env: ToolEnv, tree: Path) -> None:
    for rg in ([RG] if RG else []) + [None]:
        capped = ToolEnv(roots=env.roots, limits=ToolLimits(grep_max_matches=2))
        result = await run_grep(ToolRegistry(capped, [Grep(rg)]), pattern="alpha")
        assert result.output == (
            "a/b.txt:1: alpha in a/b\na.txt:1: alpha\n"
            "[Showing the first 2 matches; there are more. Narrow the search.]"
        )


async def test_grep_reports_no_match_and_bad_input(grep: ToolRegistry, tree: Path) -> None:
    none = await run_grep(grep, pattern="omega")
    assert none.output == "No matches for `omega` in .."
    assert not none.is_error
    bad = await run_grep(grep, pattern="(unclosed")
    assert bad.is_error
    missing = await run_grep(grep, pattern="a", path="nowhere")
    assert missing.is_error
    assert "nowhere does not exist" in missing.output


async def test_both_backends_give_identical_results(env: ToolEnv, tree: Path) -> None:
    if RG is None:
        pytest.skip("ripgrep (rg) is not on PATH; CI installs it via scripts/setup.sh")
    for args in ({"pattern": "alpha"}, {"pattern": "a", "case_insensitive": True}):
        fast = await run_grep(ToolRegistry(env, [Grep(RG)]), **args)
        slow = await run_grep(ToolRegistry(env, [Grep(None)]), **args)
        assert fast.output == slow.output


async def test_grep_declares_a_search_of_its_root(call: Call, env: ToolEnv, tree: Path) -> None:
    out = await call("grep", pattern="alpha", path="sub")
    root = f"{env.cwd}/sub"
    assert out.declaration.title == "Search for `alpha` in sub"
    assert out.declaration.kind == "search"
    assert out.declaration.reads == (root,)
    assert out.declaration.locations == (Location(root),)


async def test_glob_lists_sorted_matches_without_git(call: Call, env: ToolEnv, tree: Path) -> None:
    out = await call("glob", pattern="**/*.py")
    assert out.result.output == "b.py\nsub/deep/d.py"
    assert out.declaration.title == "Find `**/*.py` in ."
    assert out.declaration.kind == "search"
    assert out.declaration.reads == (env.cwd,)
    everything = await call("glob", pattern="**/*")
    assert ".git" not in everything.result.output
    assert "sub/\n" in everything.result.output  # directories end with a slash
    assert ".hidden/c.txt" in everything.result.output


async def test_glob_relative_to_a_path_and_capped(tree: Path) -> None:
    env = ToolEnv(roots=(str(tree),), limits=ToolLimits(glob_max_results=2))
    tools = ToolRegistry(env)
    result = await tools.run(ToolCall("c1", "glob", {"pattern": "*.txt"}), RecordingProgress())
    assert result.output == (
        ".secret.txt\na.txt\n[Showing the first 2 of 3 matches; narrow the pattern or path.]"
    )
    result = await tools.run(
        ToolCall("c1", "glob", {"pattern": "*", "path": "sub/deep"}), RecordingProgress()
    )
    assert result.output == "sub/deep/d.py"
    await env.aclose()


async def test_glob_errors_and_empty_results(call: Call, tree: Path) -> None:
    none = await call("glob", pattern="*.rs")
    assert none.result.output == "No files match `*.rs` in .."
    not_dir = await call("glob", pattern="*", path="a.txt")
    assert not_dir.result.is_error
    assert "a.txt is not a directory" in not_dir.result.output


async def test_grep_withholds_matches_in_secret_files(grep: ToolRegistry, tree: Path) -> None:
    (tree / "server.key").write_text("alpha SECRET-KEY-MATERIAL\n")
    (tree / "creds").mkdir()
    (tree / "creds" / "id_rsa").write_text("alpha PRIVATE\n")
    result = await run_grep(grep, pattern="alpha")
    assert "SECRET-KEY-MATERIAL" not in result.output
    assert "PRIVATE" not in result.output
    assert "a.txt:1: alpha" in result.output
    assert result.output.endswith("\n[2 files that look like secrets are withheld.]")


async def test_a_ripgrep_failure_is_reported_even_when_it_exits_after_closing_stdout(
    env: ToolEnv, tree: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The end of rg's stdout comes before its exit status: its status must be waited
    for, not killed away (a bad regex was once shown as "No matches")."""
    slow = tmp_path_factory.mktemp("bin") / "rg"
    slow.write_text(
        "#!/bin/sh\nexec 1>&-\necho 'regex parse error: unclosed group' >&2\nsleep 0.3\nexit 2\n"
    )
    slow.chmod(0o755)
    result = await run_grep(ToolRegistry(env, [Grep(str(slow))]), pattern="(unclosed")
    assert result.is_error
    assert "grep failed: regex parse error: unclosed group" in result.output


@pytest.fixture
def linked(tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder outside the tree, reachable from it through the symlink `link`."""
    outside = tmp_path_factory.mktemp("outside")
    (outside / "private-name.txt").write_text("x")
    (outside / "notes.txt").write_text("alpha from outside\n")
    (tree / "link").symlink_to(outside, target_is_directory=True)
    return outside


async def test_glob_never_lists_names_outside_the_searched_directory(
    call: Call, linked: Path
) -> None:
    for climbing in ("../*", "sub/../../*"):
        with pytest.raises(ToolInputError, match="may not climb"):
            await call("glob", pattern=climbing)
    for pattern in ("link/*", "**/*", "*/*.txt", "**/private-name.txt"):
        out = await call("glob", pattern=pattern)
        assert "link/private-name.txt" not in out.result.output, pattern
    listed = await call("glob", pattern="*")
    assert "link/" in listed.result.output.splitlines()  # the symlink itself is a name here


async def test_grep_does_not_follow_a_symlinked_directory_or_a_climbing_glob(
    grep: ToolRegistry, linked: Path
) -> None:
    for extra in ({}, {"glob": "../*"}, {"glob": "link/*"}):
        result = await run_grep(grep, pattern="alpha", **extra)
        assert "from outside" not in result.output, extra


async def test_glob_skips_what_gitignore_ignores(call: Call, tree: Path) -> None:
    (tree / ".git" / "info").mkdir()
    (tree / ".git" / "info" / "exclude").write_text("*.excluded\n")
    (tree / ".gitignore").write_text("*.log\n!keep.log\nbuild/\n/only-top.txt\n")
    (tree / "sub" / ".gitignore").write_text("*.gen.py\n!a.gen.py\n")
    for name in (
        "x.log",
        "keep.log",
        "build/out.py",
        "only-top.txt",
        "sub/only-top.txt",
        "sub/b.gen.py",
        "sub/a.gen.py",
        "y.excluded",
        "sub/deep/z.log",
    ):
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text("x\n")
    listed = (await call("glob", pattern="**/*")).result.output.splitlines()
    for gone in (
        "x.log",
        "build/",
        "build/out.py",
        "only-top.txt",
        "sub/b.gen.py",
        "y.excluded",
        "sub/deep/z.log",
    ):
        assert gone not in listed, gone
    for kept in ("keep.log", "sub/only-top.txt", "sub/a.gen.py", "sub/deep/d.py", "a.txt"):
        assert kept in listed, kept
    below = await call("glob", pattern="**/*", path="sub")  # the root's rules still apply
    assert "sub/deep/z.log" not in below.result.output
    assert "sub/deep/d.py" in below.result.output


async def test_glob_never_lets_an_ignore_file_block_or_leak(
    call: Call, tree: Path, linked: Path
) -> None:
    """A planted `.gitignore` that is a FIFO would block a plain read; one linked to a
    file outside would apply rules the workspace does not hold. Neither is read."""
    (linked / "rules").write_text("*.py\n")
    (tree / ".gitignore").symlink_to(linked / "rules")
    os.mkfifo(tree / "sub" / ".gitignore")
    listed = (await call("glob", pattern="**/*.py")).result.output
    assert listed == "b.py\nsub/deep/d.py"


async def test_both_grep_backends_skip_what_gitignore_ignores(
    grep: ToolRegistry, tree: Path
) -> None:
    (tree / ".gitignore").write_text("build/\n*.log\n!keep.log\n")
    (tree / "sub" / ".gitignore").write_text("/deep/\n")
    for name in ("build/out.txt", "x.log", "keep.log", "sub/deep/more.txt", "sub/kept.txt"):
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text("alpha\n")
    found = (await run_grep(grep, pattern="alpha")).output
    for gone in ("build/out.txt", "x.log", "sub/deep/"):
        assert gone not in found, gone
    assert "keep.log:1: alpha" in found and "sub/kept.txt:1: alpha" in found


@pytest.mark.parametrize("rg", [RG, None], ids=["ripgrep", "python"])
async def test_grep_never_shows_loopds_own_folder_inside_the_workspace(
    rg: str | None, tree: Path
) -> None:
    """`$LOOPD_HOME` inside the workspace: its login is one of loopd's own secrets."""
    own = tree / "loopd-data"
    own.mkdir()
    (own / "login.json").write_text('{"env": {"OPENAI_API_KEY": "alpha-sk-login"}}')
    env = ToolEnv(roots=(str(tree),), reader=DiskReader((), secrets=(str(own),)))
    tools = ToolRegistry(env, [Grep(rg)])
    for args in ({}, {"path": "loopd-data"}, {"path": "loopd-data/login.json"}):
        result = await run_grep(tools, pattern="alpha", **args)
        assert "sk-login" not in result.output, args
        assert result.output.endswith("[1 file that looks like a secret is withheld.]"), args


@pytest.mark.parametrize("rg", [RG, None], ids=["ripgrep", "python"])
async def test_grep_reads_the_kept_outputs_in_loopds_folder_but_not_its_login(
    rg: str | None, tmp_path: Path
) -> None:
    """A command's full output is kept in loopd's data dir and named to the model,
    which may search it like any file outside the workspace; the login beside it no."""
    ws, own = tmp_path / "ws", tmp_path / "data"
    kept = own / "outputs" / "s1"
    for folder in (ws, kept):
        folder.mkdir(parents=True)
    (kept / "c1.log").write_text("alpha from the build\n")
    (own / "login.json").write_text('{"env": {"OPENAI_API_KEY": "alpha-sk-login"}}')
    reader = DiskReader((), secrets=(str(own),), exempt=(str(own / "outputs"),))
    env = ToolEnv(roots=(str(ws),), reader=reader)
    result = await run_grep(ToolRegistry(env, [Grep(rg)]), pattern="alpha", path=str(own))
    assert "c1.log:1: alpha from the build" in result.output
    assert "sk-login" not in result.output
    assert result.output.endswith("[1 file that looks like a secret is withheld.]")

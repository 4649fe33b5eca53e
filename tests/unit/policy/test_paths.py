import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.unit.fifos import released

from loopd.policy.paths import PathIssue, PathPolicy
from loopd.policy.secrets import contains, is_secret_name
from loopd.sandbox.hide import linked_git_dirs

COMPONENTS = ["a", "b", "..", ".", "in_link", "out_link", "etc_link", ".env", ".env.example",
              "x.pem", ".ssh", "id_rsa", ".git", "hooks", "config", ".loopd", "f.txt"]  # fmt: skip
relative_paths = st.lists(st.sampled_from(COMPONENTS), min_size=1, max_size=8).map("/".join)
fixture_ok = settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=150)


@pytest.fixture
def tree(tmp_path: Path) -> PathPolicy:
    """A workspace with symlinks that stay inside, leave it, and point at /etc."""
    ws = tmp_path / "ws"
    (ws / "a" / "b").mkdir(parents=True)
    (ws / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "home" / ".ssh").mkdir(parents=True)
    (ws / "in_link").symlink_to("a")
    (ws / "a" / "out_link").symlink_to(tmp_path / "outside")
    (ws / "a" / "etc_link").symlink_to("/etc")
    (ws / "a" / "b" / "in_link").symlink_to("../../.git")
    return PathPolicy((str(ws.resolve()),), str((tmp_path / "home").resolve()))


@fixture_ok
@given(rel=relative_paths)
def test_an_allowed_read_always_resolves_inside_a_root(tree: PathPolicy, rel: str) -> None:
    verdict = tree.check_read(rel)
    assert verdict.path == os.path.realpath(os.path.join(tree.roots[0], rel))
    if verdict.ok:
        assert contains(tree.roots[0], verdict.path)
        assert verdict.root == tree.roots[0]
    else:
        assert verdict.reason


@fixture_ok
@given(rel=relative_paths)
def test_secrets_are_always_refused_wherever_the_path_leads(tree: PathPolicy, rel: str) -> None:
    verdict = tree.check_read(rel)
    name = os.path.basename(verdict.path)
    in_secret_dir = ".ssh" in verdict.path.split("/")
    if is_secret_name(name) or in_secret_dir:
        assert verdict.issue is PathIssue.SECRET


@fixture_ok
@given(rel=relative_paths)
def test_an_allowed_write_is_inside_a_root_and_not_protected(tree: PathPolicy, rel: str) -> None:
    verdict = tree.check_write(rel)
    if verdict.ok:
        inside = verdict.path[len(tree.roots[0]) :]
        assert contains(tree.roots[0], verdict.path)
        assert "/.git/hooks" not in inside and not inside.endswith("/.git/config")
        assert "/.loopd" not in inside
    elif not contains(tree.roots[0], verdict.path):
        assert verdict.issue is PathIssue.OUTSIDE_ROOTS


@pytest.mark.parametrize(
    "name",
    [".env", ".ENV", ".env.local", ".env.production", "server.pem", "tls.key", "id_rsa",
     "id_ed25519.pub", "cert.p12", ".netrc", ".npmrc", ".pypirc", ".git-credentials",
     "aws-credentials.json", "credentials.json"],
)  # fmt: skip
def test_secret_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name", [".env.example", ".env.sample", ".env.template", "environment.py", "keys.py", "monkey"]
)
def test_not_secret_names(name: str) -> None:
    assert not is_secret_name(name)


@pytest.mark.parametrize(
    "rel", ["~/.ssh/id_ed25519", "~/.aws/config", "~/.gnupg/x", "~/.config/loopd/config.toml",
            "~/.docker/config.json", "~/.kube/config"],
)  # fmt: skip
def test_home_secrets(tree: PathPolicy, rel: str) -> None:
    assert tree.check_read(rel).issue is PathIssue.SECRET


@pytest.mark.parametrize(
    ("rel", "protected"),
    [
        (".git/hooks/pre-commit", True),
        (".git/config", True),
        (".GIT/Hooks/x", True),
        ("sub/repo/.git/hooks/post-checkout", True),
        (".gitmodules", True),
        (".loopd/config.toml", True),
        (".vscode/tasks.json", True),
        (".bashrc", True),
        (".envrc", True),
        (".mcp.json", True),
        (".git/index", True),  # the whole git directory: the file tools have no business there
        (".git/refs/heads/main", True),
        (".git/modules/sub/config", True),
        (".zed/settings.json", True),
        (".zed/tasks.json", True),
        (".helix/languages.toml", True),
        (".claude/settings.json", True),
        (".codex/config.toml", True),
        (".idea/workspace.xml", True),
        ("pkg/.vscode/settings.json", True),
        (".nvim.lua", True),
        (".exrc", True),
        (".lazy.lua", True),
        (".zshenv", True),
        ("sub/.git", True),  # a gitfile pointing anywhere
        ("src/config", False),
        ("src/.gitignore", False),
        ("Makefile", False),
        ("hooks/x", False),
    ],
)
def test_protected_writes_inside_the_workspace(tree: PathPolicy, rel: str, protected: bool) -> None:
    verdict = tree.check_write(rel)
    assert (verdict.issue is PathIssue.PROTECTED) is protected
    assert contains(tree.roots[0], verdict.path)


def test_extra_secret_locations(tmp_path: Path) -> None:
    policy = PathPolicy((str(tmp_path),), "/nonexistent-home", (str(tmp_path / "store"),))
    assert policy.check_read("store/sessions.db").issue is PathIssue.SECRET


def test_a_policy_needs_a_root() -> None:
    with pytest.raises(ValueError, match="root"):
        PathPolicy((), "/home/x")


def test_a_git_directory_is_protected_whatever_its_name(tmp_path: Path) -> None:
    """A renamed `.git`, a separate git dir and a bare repository are git
    directories by what they hold; git runs what is in their config and hooks."""
    ws = tmp_path / "ws"
    for git_dir in (ws / ".g", ws / "store" / "bare.git", ws / "sep"):
        (git_dir / "objects").mkdir(parents=True)
        (git_dir / "refs").mkdir()
        (git_dir / "HEAD").write_text("ref: refs/heads/main\n")
    (ws / "wt").mkdir()
    (ws / "wt" / ".git").write_text("gitdir: ../sep\n")
    policy = PathPolicy((str(ws),), str(tmp_path / "home"))
    for rel in (".g/config", ".g/hooks/pre-commit", "store/bare.git/info/attributes", "sep/config"):
        verdict = policy.check_write(rel)
        assert verdict.issue is PathIssue.PROTECTED, rel
        assert "is in a git directory" in verdict.reason
    assert policy.check_write("store/readme.md").ok


def test_the_hooks_path_git_runs_from_is_protected(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".git" / "objects").mkdir(parents=True)
    (ws / ".git" / "refs").mkdir()
    (ws / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (ws / ".git" / "config").write_text(
        '[core]\n\tbare = false\n\thooksPath = "tools/hooks"\n'
        '[includeIf "onbranch:main"]\n\tpath = ../project.gitconfig\n'
    )
    policy = PathPolicy((str(ws),), str(tmp_path / "home"))
    verdict = policy.check_write("tools/hooks/pre-commit")  # not there yet
    assert verdict.issue is PathIssue.PROTECTED
    assert "core.hooksPath" in verdict.reason
    included = policy.check_write("project.gitconfig")  # included, not there yet
    assert included.issue is PathIssue.PROTECTED and "included by git" in included.reason
    assert policy.check_write("tools/build.sh").ok


def test_kept_outputs_read_like_any_outside_folder_inside_loopds_own(tmp_path: Path) -> None:
    data = tmp_path / "data"
    kept = data / "outputs" / "s1"
    kept.mkdir(parents=True)
    (kept / "call.log").write_text("output")
    (kept / ".env").write_text("x")
    (data / "sessions.db").write_text("")
    ws = tmp_path / "ws"
    ws.mkdir()
    policy = PathPolicy((str(ws),), str(tmp_path / "home"), (str(data),), (str(kept),))
    assert policy.check_read(str(kept / "call.log")).issue is PathIssue.OUTSIDE_ROOTS
    assert policy.check_read(str(kept / ".env")).issue is PathIssue.SECRET
    assert policy.check_read(str(data / "sessions.db")).issue is PathIssue.SECRET
    assert policy.check_write(str(kept / "call.log")).issue is PathIssue.OUTSIDE_ROOTS


def test_gits_own_files_planted_as_fifos_block_neither_the_policy_nor_the_sandbox(
    tmp_path: Path,
) -> None:
    """Not in the issue: the write policy reads `.git/config` (for `core.hooksPath`),
    the sandbox reads a `.git` pointer file; both were plain opens."""
    repo, worktree = tmp_path / "repo", tmp_path / "wt"
    (repo / ".git" / "objects").mkdir(parents=True)
    (repo / ".git" / "refs").mkdir()
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    os.mkfifo(repo / ".git" / "config")
    worktree.mkdir()
    os.mkfifo(worktree / ".git")
    policy = PathPolicy((str(repo),), str(tmp_path / "home"))
    with released(repo / ".git" / "config", worktree / ".git") as blocked:
        verdict = policy.check_write(str(repo / "src.py"))
        linked = linked_git_dirs(str(worktree))
    assert blocked == []
    assert verdict.ok and linked == ()

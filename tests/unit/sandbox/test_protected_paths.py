"""Everything git executes from, and every protected name, stays unchangeable for a
command in the bubblewrap tiers: after renames, for nested repositories, worktrees and
submodules, and where nothing existed yet. Real git, real bwrap; the attack is run
inside the sandbox and its effect is checked by running git outside it, as the
person would."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from sandbox_boxes import make_box

from loopd.policy.tiers import Tier

BWRAP_TIERS = [Tier.BWRAP_LANDLOCK, Tier.BWRAP]
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}
IDENTITY = "git -c user.name=t -c user.email=t@example.com"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """git as the person runs it later, outside any sandbox."""
    env = {**os.environ, **GIT_ENV, "HOME": str(cwd.parent / "home")}
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    (tmp_path / "home").mkdir()
    git(ws, "init", "-q", "-b", "main")
    (ws / "a.txt").write_text("a\n")
    git(ws, "add", "a.txt")
    git(ws, "commit", "-qm", "init")
    return ws


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    """Where a planted command would write if git ever ran it."""
    return tmp_path / "PWNED"


def assert_git_runs_nothing(ws: Path, marker: Path) -> None:
    for args in (("status",), ("commit", "-qam", "later", "--allow-empty")):
        git(ws, *args)
    assert not marker.exists(), marker.read_text()


@pytest.mark.parametrize("tier", BWRAP_TIERS)
def test_git_add_and_commit_still_work_inside(tier: Tier, repo: Path) -> None:
    box = make_box(tier, repo)
    done = box.run(f"echo b > b.txt && git add b.txt && {IDENTITY} commit -qm b && echo OK")
    assert "OK" in done.stdout, done.stderr
    assert git(repo, "log", "--format=%s").stdout.split() == ["b", "init"]


@pytest.mark.parametrize("tier", BWRAP_TIERS)
def test_renaming_the_git_dir_away_fails(tier: Tier, repo: Path, marker: Path) -> None:
    box = make_box(tier, repo)
    box.run(
        "mv .git .g && mkdir .git && cp -r .g/. .git/ && "
        f"git config core.fsmonitor 'echo PWNED > {marker}; false'; "
        f"printf '#!/bin/sh\\necho PWNED > {marker}\\n' > .git/hooks/pre-commit; "
        "chmod +x .git/hooks/pre-commit; rm -rf .git/hooks; "
        f"git config --file .git/config core.hooksPath /tmp; "
        "mv .git/config .git/config.old; mv .git/hooks .git/h2; true"
    )
    assert (repo / ".git" / "HEAD").is_file() and not (repo / ".g").exists()
    assert "fsmonitor" not in (repo / ".git" / "config").read_text()
    assert "hookspath" not in (repo / ".git" / "config").read_text().lower()
    assert_git_runs_nothing(repo, marker)


@pytest.mark.parametrize("tier", BWRAP_TIERS)
def test_a_nested_repository_cannot_be_moved_aside(tier: Tier, repo: Path, marker: Path) -> None:
    nested = repo / "vendor" / "lib"
    nested.mkdir(parents=True)
    git(nested, "init", "-q")
    box = make_box(tier, repo)
    box.run(
        "mv vendor v2; mv vendor/lib vendor/l2; mv vendor/lib/.git vendor/lib/.g; "
        f"git -C vendor/lib config core.fsmonitor 'echo PWNED > {marker}; false'; true"
    )
    assert (nested / ".git" / "HEAD").is_file()
    git(nested, "status")
    assert not marker.exists()


@pytest.mark.parametrize("tier", BWRAP_TIERS)
def test_worktree_pointers_and_submodule_configs_are_frozen(
    tier: Tier, repo: Path, marker: Path, tmp_path: Path
) -> None:
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    git(upstream, "init", "-q", "-b", "main")
    git(upstream, "commit", "-q", "--allow-empty", "-m", "u")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(upstream), "sub")
    git(repo, "commit", "-qm", "sub")
    git(repo, "worktree", "add", "-q", "wt")
    module_config = repo / ".git" / "modules" / "sub" / "config"
    before = module_config.read_text()
    evil = f"echo PWNED > {marker}; false"
    box = make_box(tier, repo)
    box.run(
        f"printf '[core]\\n\\tfsmonitor = \"{evil}\"\\n' >> .git/modules/sub/config; "
        f"git -C sub config core.fsmonitor '{evil}'; "
        "echo 'gitdir: /tmp/evil' > sub/.git; mv sub sub2; "
        "echo 'gitdir: /tmp/evil' > wt/.git; mv wt wt2; "
        f"git -C wt config core.fsmonitor '{evil}'; "
        f"printf '#!/bin/sh\\necho PWNED > {marker}\\n' > .git/modules/sub/hooks/post-checkout; "
        "true"
    )
    assert module_config.read_text() == before
    assert (repo / "sub" / ".git").read_text().startswith("gitdir: ../.git/modules/sub")
    assert not (repo / "wt2").exists() and not (repo / "sub2").exists()
    for where in (repo / "sub", repo / "wt", repo):
        git(where, "status")
    assert not marker.exists()


@pytest.mark.parametrize("tier", BWRAP_TIERS)
def test_info_attributes_a_hooks_path_and_included_configs_are_frozen(
    tier: Tier, repo: Path, marker: Path
) -> None:
    (repo / "tools" / "hooks").mkdir(parents=True)
    git(repo, "config", "core.hooksPath", "tools/hooks")
    git(repo, "config", "include.path", "../shared.gitconfig")  # there
    git(repo, "config", "--add", "include.path", "../local.gitconfig")  # not there (yet)
    (repo / "shared.gitconfig").write_text("[user]\n\tname = t\n")
    evil = f'[core]\\n\\tfsmonitor = "echo PWNED > {marker}; false"\\n'
    box = make_box(tier, repo)
    box.run(
        f"printf '{evil}' >> shared.gitconfig; printf '{evil}' > local.gitconfig; "
        "echo '* filter=x' > .git/info/attributes; mkdir -p .git/info; "
        "echo '* filter=x' >> .git/info/attributes; "
        f"printf '#!/bin/sh\\necho PWNED > {marker}\\n' > tools/hooks/pre-commit; "
        "chmod +x tools/hooks/pre-commit; mv tools t2; true"
    )
    assert not (repo / "tools" / "hooks" / "pre-commit").exists()
    assert not (repo / ".git" / "info" / "attributes").exists()
    assert "fsmonitor" not in (repo / "shared.gitconfig").read_text()
    assert (repo / "local.gitconfig").read_text() == ""  # the empty read-only stand-in
    assert_git_runs_nothing(repo, marker)


@pytest.mark.parametrize("tier", BWRAP_TIERS)
@pytest.mark.parametrize(
    "rel",
    [
        ".loopd/config.toml",
        ".vscode/tasks.json",
        ".vscode/settings.json",
        ".zed/settings.json",
        ".zed/tasks.json",
        ".helix/languages.toml",
        ".idea/workspace.xml",
        ".claude/settings.json",
        ".codex/config.toml",
    ],
)
def test_protected_folders_cannot_be_created(tier: Tier, repo: Path, rel: str) -> None:
    box = make_box(tier, repo)
    folder = rel.split("/")[0]
    box.run(f"mkdir -p {folder}; echo evil > {rel}; true")
    box.run(f"rm -rf {folder} || mv {folder} {folder}.old; mkdir -p {folder}; echo evil > {rel}")
    assert not (repo / rel).exists()
    assert not any((repo / folder).iterdir())  # what is left is the empty placeholder


@pytest.mark.parametrize("tier", BWRAP_TIERS)
def test_existing_protected_files_cannot_be_changed_or_replaced(tier: Tier, repo: Path) -> None:
    for name in (".envrc", ".bashrc", ".mcp.json"):
        (repo / name).write_text("# mine\n")
    (repo / "pkg" / ".vscode").mkdir(parents=True)
    box = make_box(tier, repo)
    box.run(
        "for f in .envrc .bashrc .mcp.json; do echo evil >> $f; mv $f $f.old; "
        "echo evil > $f; done; echo '{}' > pkg/.vscode/tasks.json; mv pkg p2; true"
    )
    for name in (".envrc", ".bashrc", ".mcp.json"):
        assert (repo / name).read_text() == "# mine\n"
    assert not (repo / "pkg" / ".vscode" / "tasks.json").exists()


@pytest.mark.parametrize("tier", BWRAP_TIERS)
def test_rc_files_in_home_stay_unwritable(tier: Tier, repo: Path) -> None:
    home = repo.parent / "home"
    box = make_box(tier, repo)
    box.run("echo evil >> ~/.bashrc; echo evil > ~/.zshrc; mkdir -p ~/.config; true")
    assert not (home / ".bashrc").exists() and not (home / ".zshrc").exists()

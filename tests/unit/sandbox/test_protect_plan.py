"""The mount plan on its own (no bwrap needed): what is pinned, frozen and stood in
for, and in what order."""

import os
from pathlib import Path

from loopd.sandbox.protect import PLACEHOLDER_DIRS, protection


def make_git_dir(path: Path) -> None:
    (path / "hooks").mkdir(parents=True)
    (path / "objects").mkdir()
    (path / "refs").mkdir()
    (path / "HEAD").write_text("ref: refs/heads/main\n")
    (path / "config").write_text("[core]\n")


def test_a_nested_repository_and_its_parents_are_pinned(tmp_path: Path) -> None:
    ws = tmp_path.resolve()
    make_git_dir(ws / ".git")
    make_git_dir(ws / "vendor" / "lib" / ".git")
    nested = str(ws / "vendor" / "lib" / ".git")
    plan = protection([str(ws)], [nested], str(ws / "home"))
    assert plan.pins == (
        str(ws / ".git"),
        str(ws / "vendor"),
        str(ws / "vendor" / "lib"),
        nested,
    )  # shallow first: a parent's bind must not cover a child's
    assert f"{nested}/config" in plan.frozen and f"{nested}/hooks" in plan.frozen
    assert str(ws / ".git" / "config") in plan.frozen
    assert f"{nested}/info" in plan.placeholders and f"{nested}/modules" in plan.placeholders
    args = plan.mounts()
    assert args.index("--ro-bind") > args.index(nested)  # pins before read-only binds


def test_missing_folders_get_placeholders_and_missing_files_none(tmp_path: Path) -> None:
    ws = tmp_path.resolve()
    (ws / ".vscode").mkdir()
    (ws / ".envrc").write_text("# mine\n")
    plan = protection([str(ws)], [], str(ws / "home"))
    assert str(ws / ".vscode") in plan.frozen and str(ws / ".envrc") in plan.frozen
    missing = {os.path.basename(p) for p in plan.placeholders}
    assert missing == set(PLACEHOLDER_DIRS) - {".vscode"}
    assert not any(p.endswith((".bashrc", ".nvim.lua")) for p in plan.placeholders)
    assert plan.empty_files == ()


def test_a_gitfile_is_frozen_and_its_target_protected(tmp_path: Path) -> None:
    ws = tmp_path.resolve()
    make_git_dir(ws / ".git" / "modules" / "sub")
    (ws / "sub").mkdir()
    (ws / "sub" / ".git").write_text("gitdir: ../.git/modules/sub\n")
    make_git_dir(ws / ".git")
    (ws / ".git" / "modules" / "sub" / "config").write_text("[core]\n")
    plan = protection([str(ws)], [str(ws / "sub" / ".git")], str(ws / "home"))
    assert str(ws / "sub" / ".git") in plan.frozen and str(ws / "sub") in plan.pins
    assert str(ws / ".git" / "modules") in plan.frozen
    # inside the read-only modules folder nothing more is mounted (it could not be)
    assert not any(p.startswith(str(ws / ".git" / "modules") + "/") for p in plan.pins)


def test_plan_mode_protects_nothing_extra(tmp_path: Path) -> None:
    plan = protection([], [], str(tmp_path))
    assert plan.mounts() == []

"""What bubblewrap hides outside the workspace, decided from the folders alone."""

from __future__ import annotations

from pathlib import Path

from loopd.sandbox.hide import covered_by, hidden_view


def test_the_home_is_hidden_but_for_toolchains_and_its_credentials_stay_masked(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    for d in (".config/git", ".cargo/bin", ".aws", "proj/ws", ".m2"):
        (home / d).mkdir(parents=True)
    (home / ".gitconfig").write_text("[user]\n")
    (home / ".config/git/credentials").write_text("https://u:t@host\n")
    ws = str(home / "proj" / "ws")
    view = hidden_view(str(home), [ws], home_readable=["~/.m2"])
    assert view.tmpfs == (str(home),)  # the workspace's parent is inside it already
    targets = [target for _, target in view.shown]
    assert targets == [
        str(home / ".gitconfig"),
        str(home / ".config/git"),
        str(home / ".cargo/bin"),
        str(home / ".m2"),
    ]
    assert view.masked == (str(home / ".config/git/credentials"),)
    assert covered_by(view, str(home / ".aws" / "credentials"))
    assert covered_by(view, ws)  # so the caller binds the workspace back


def test_the_workspace_parent_is_hidden_unless_it_is_root_a_root_or_tmp() -> None:
    home = "/nonexistent-home"  # a home that does not exist is not mounted over
    assert hidden_view(home, ["/srv/ws"]).tmpfs == ("/srv",)
    assert hidden_view(home, ["/srv/ws", "/srv/ws/sub"]).tmpfs == ("/srv",)  # a root
    assert hidden_view(home, ["/ws"]).tmpfs == ()
    assert hidden_view(home, ["/tmp/x/ws"]).tmpfs == ()  # /tmp is private already


def test_loopd_folders_and_sockets(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    sock = tmp_path / "a.sock"
    sock.write_text("")
    view = hidden_view("/", [str(tmp_path / "ws")], private=[str(data)], sockets=[str(sock)])
    assert view.private == (str(data),)
    assert "/run" in view.tmpfs
    assert (str(sock), str(sock)) in view.shown


def test_a_loopd_folder_inside_another_is_hidden_with_it(tmp_path: Path) -> None:
    """The daemon's socket folder lives in the data dir by default (and a config dir
    may too): emptying the inner one again, inside the emptied outer one, made bwrap
    refuse every command."""
    data = tmp_path / "data"
    (data / "run").mkdir(parents=True)
    other = tmp_path / "config"
    other.mkdir()
    private = [str(data / "run"), str(data), str(other)]
    view = hidden_view("/", [str(tmp_path / "ws")], private=private)
    assert view.private == (str(data), str(other))


def test_a_worktree_keeps_its_git_directories(tmp_path: Path) -> None:
    main_git = tmp_path / "srv" / "main" / ".git"
    linked = main_git / "worktrees" / "wt"
    linked.mkdir(parents=True)
    (linked / "commondir").write_text("../..\n")
    ws = tmp_path / "srv" / "wt"
    ws.mkdir()
    (ws / ".git").write_text(f"gitdir: {linked}\n")
    view = hidden_view("/nonexistent-home", [str(ws)])
    assert [target for _, target in view.shown] == [str(linked), str(main_git)]

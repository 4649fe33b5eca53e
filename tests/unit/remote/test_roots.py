"""What a remote client may name: paths beneath the server's roots, canonicalised."""

from __future__ import annotations

from pathlib import Path

from loopd.remote.roots import canonical_roots, outside, stored_outside, visible


def new(cwd: object, extra: object = None) -> dict[str, object]:
    params: dict[str, object] = {"cwd": cwd, "mcpServers": []}
    if extra is not None:
        params["additionalDirectories"] = extra
    return {"id": 1, "method": "session/new", "params": params}


def test_every_way_of_naming_a_path_outside_is_caught(tmp_path: Path) -> None:
    root, away = tmp_path / "root", tmp_path / "rootless"  # a shared prefix is not inside
    root.mkdir()
    away.mkdir()
    (root / "link").symlink_to(away)
    roots = canonical_roots([str(root)])
    assert outside(new(str(root / "sub")), roots) is None
    assert outside(new(str(away)), roots) == str(away)
    assert outside(new(str(root / "link")), roots) == str(root / "link")
    assert outside(new(f"{root}/../rootless"), roots) is not None
    assert outside(new("relative/path"), roots) is not None
    assert outside(new(None), roots) is not None
    assert outside(new(str(root), [str(away)]), roots) == str(away)
    assert outside(new(str(root), "/etc"), roots) is not None  # not even a list
    for method in ("session/load", "session/resume", "session/fork"):
        message = {"id": 1, "method": method, "params": {"sessionId": "s", "cwd": str(away)}}
        assert outside(message, roots) == str(away)


def test_a_prompt_linking_a_file_outside_is_caught(tmp_path: Path) -> None:
    roots = canonical_roots([str(tmp_path)])
    inside = {"type": "resource_link", "name": "a", "uri": f"file://{tmp_path}/a"}
    escaped = {"type": "resource_link", "name": "a", "uri": "file:///etc/%70asswd"}
    embedded = {"type": "resource", "resource": {"uri": "file:///etc/shadow", "text": ""}}
    web = {"type": "resource_link", "name": "w", "uri": "https://example.com/x"}

    def prompt(*blocks: object) -> dict[str, object]:
        return {"method": "session/prompt", "params": {"sessionId": "s", "prompt": list(blocks)}}

    assert outside(prompt(inside, web), roots) is None
    assert outside(prompt(inside, escaped), roots) == "/etc/passwd"
    assert outside(prompt(embedded), roots) == "/etc/shadow"


def test_a_stored_session_is_judged_by_the_folders_it_was_stored_with(tmp_path: Path) -> None:
    roots = canonical_roots([str(tmp_path)])
    stored = {"s-in": (str(tmp_path),), "s-out": (str(tmp_path), "/srv/other")}
    for method in ("session/load", "session/resume", "session/fork"):
        opening = {"method": method, "params": {"sessionId": "s-out", "cwd": str(tmp_path)}}
        assert stored_outside(opening, roots, stored.get) == "/srv/other"
        opening["params"]["sessionId"] = "s-in"
        assert stored_outside(opening, roots, stored.get) is None
    listed = {"id": 1, "result": {"sessions": [
        {"sessionId": "a", "cwd": str(tmp_path)},
        {"sessionId": "b", "cwd": "/srv/other"},
        {"sessionId": "c", "cwd": str(tmp_path), "additionalDirectories": ["/etc"]},
    ]}}  # fmt: skip
    assert [s["sessionId"] for s in visible(listed, roots)["result"]["sessions"]] == ["a"]


def test_what_an_lsp_client_names_is_judged_too(tmp_path: Path) -> None:
    """`loopd lsp --remote`: the extension's session methods, the workspace of
    `initialize`, and the folders and documents `loopd.*` commands name."""
    roots = canonical_roots([str(tmp_path)])
    inside, away = tmp_path.as_uri(), "file:///etc"

    def init(**params: object) -> dict[str, object]:
        return {"id": 0, "method": "initialize", "params": {"capabilities": {}, **params}}

    def command(name: str, *arguments: object) -> dict[str, object]:
        params = {"command": name, "arguments": list(arguments)}
        return {"id": 1, "method": "workspace/executeCommand", "params": params}

    lsp_new = {"id": 1, "method": "loopd/session/new", "params": {"cwd": "/srv"}}
    assert outside(lsp_new, roots) == "/srv"
    assert outside(init(rootUri=inside, workspaceFolders=[{"uri": inside}]), roots) is None
    assert outside(init(), roots) is None  # no workspace: sessions open in the first root
    assert outside(init(rootUri=away), roots) == "/etc"
    assert outside(init(rootPath="/etc"), roots) == "/etc"
    assert outside(init(rootUri=inside, workspaceFolders=[{"uri": away}]), roots) == "/etc"
    assert outside(init(rootUri="untitled:x"), roots) == ""  # not a folder of the server's
    assert outside(command("loopd.newSession", {"cwd": "/"}), roots) == "/"
    assert outside(command("loopd.newSession"), roots) is None  # the workspace's own
    assert outside(command("loopd.trust", "/etc"), roots) == "/etc"
    assert outside(command("loopd.untrust", {"folder": str(tmp_path)}), roots) is None
    assert outside(command("loopd.ask", {"uri": "file:///etc/passwd"}), roots) == "/etc/passwd"
    assert outside(command("loopd.ask", {"prompt": "hi"}), roots) is None
    stored = {"s-out": ("/srv/other",)}
    delete = {"method": "loopd/session/delete", "params": {"sessionId": "s-out"}}
    assert stored_outside(delete, roots, stored.get) == "/srv/other"

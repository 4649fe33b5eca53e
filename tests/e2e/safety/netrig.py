"""The network-by-domain rig: fake registries on loopback and the test hook that makes
names look public, private or rebinding to loopd's proxy while every byte stays on
127.0.0.1 (`loopd.sandbox.resolve`, `LOOPD_TEST_NETWORK`).

- `registry`: a package index (`/simple/demo-pkg/` and its wheel, for `pip download`)
  that also answers `/hello`, and redirects `/moved` to `unlisted.test`;
- `internal`: what a command must never reach (a service on the machine's own
  loopback, or a metadata endpoint); it counts the requests it got.

Names (the addresses are never dialled: the hook maps them to the servers' ports):

    pypi.test      listed, resolves to a public address  -> registry
    unlisted.test  not listed, public                    -> registry
    also.test      likewise
    loop.test      listed, resolves to 127.0.0.1         -> internal
    meta.test      listed, resolves to 169.254.169.254   -> internal
    rebind.test    listed, public at first, then 127.0.0.1
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import sqlite3
import sys
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.e2e.safety.conftest import Box

PUBLIC, UNLISTED, REBOUND = "93.184.216.34", "93.184.216.35", "93.184.216.36"
ALLOWED = ("pypi.test", "loop.test", "meta.test", "rebind.test")
HELLO = "hello from the registry"
INTERNAL = "internal-s3cret-88"


def wheel() -> bytes:
    """A minimal valid wheel of demo-pkg 1.0."""
    info = "demo_pkg-1.0.dist-info"
    files = {
        "demo_pkg/__init__.py": "",
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{name},,\n" for name in files) + f"{info}/RECORD,,\n"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in {**files, f"{info}/RECORD": record}.items():
            archive.writestr(name, text)
    return buffer.getvalue()


WHEEL = wheel()
WHEEL_NAME = "demo_pkg-1.0-py3-none-any.whl"


@dataclass
class Server:
    """A loopback HTTP server answering `pages` (path to bytes) and `moved` (path to
    the URL it redirects to); `hits` are the paths it was asked for."""

    pages: dict[str, bytes]
    moved: dict[str, str] = field(default_factory=dict)
    hits: list[str] = field(default_factory=list)
    httpd: ThreadingHTTPServer | None = None

    @property
    def port(self) -> int:
        assert self.httpd is not None
        return int(self.httpd.server_address[1])

    def start(self) -> None:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.hits.append(self.path)
                if self.path in server.moved:
                    self.send_response(302)
                    self.send_header("Location", server.moved[self.path])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = server.pages.get(self.path.split("?")[0])
                self.send_response(200 if body is not None else 404)
                kind = "text/html" if self.path.endswith("/") else "application/octet-stream"
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()


@dataclass
class Registries:
    registry: Server
    internal: Server

    def hook(self) -> str:
        """The `LOOPD_TEST_NETWORK` value for these servers."""
        return json.dumps(
            {
                "resolve": {
                    "pypi.test": PUBLIC,
                    "unlisted.test": UNLISTED,
                    "also.test": UNLISTED,
                    "loop.test": "127.0.0.1",
                    "meta.test": "169.254.169.254",
                    "rebind.test": [REBOUND, "127.0.0.1"],
                },
                "dial": {
                    **{f"{a}:80": self.registry.port for a in (PUBLIC, UNLISTED, REBOUND)},
                    "127.0.0.1:80": self.internal.port,
                    "169.254.169.254:80": self.internal.port,
                },
            }
        )


@contextmanager
def registries() -> Iterator[Registries]:
    digest = hashlib.sha256(WHEEL).hexdigest()
    index = f'<a href="/files/{WHEEL_NAME}#sha256={digest}">{WHEEL_NAME}</a>'
    registry = Server(
        {
            "/hello": HELLO.encode(),
            "/simple/demo-pkg/": f"<html><body>{index}</body></html>".encode(),
            f"/files/{WHEEL_NAME}": WHEEL,
        },
        moved={"/moved": "http://unlisted.test/hello?via=redirect"},
    )
    internal = Server({"/": INTERNAL.encode(), "/latest/meta-data/": INTERNAL.encode()})
    for server in (registry, internal):
        server.start()
    try:
        yield Registries(registry, internal)
    finally:
        for server in (registry, internal):
            server.stop()


@dataclass(frozen=True)
class NetBox(Box):
    """A box whose loopd runs with the test hook and the domain lists configured."""

    hook: str = ""

    def env(self, base_url: str) -> dict[str, str]:
        return {**super().env(base_url), "LOOPD_TEST_NETWORK": self.hook}

    @classmethod
    def within(cls, base: Path, nets: Registries, allowed: tuple[str, ...] = ALLOWED) -> NetBox:
        box = Box.make(base)
        config = base / "config" / "loopd"
        config.mkdir(parents=True)
        listed = ", ".join(json.dumps(a) for a in allowed)
        (config / "config.toml").write_text(f"[sandbox]\nallowed_domains = [{listed}]\n")
        return cls(box.base, box.ws, box.outside, box.home, nets.hook())


def journal(box: Box) -> str:
    """Everything the box's session store holds, as SQL text."""
    with sqlite3.connect(box.base / "data" / "sessions.db") as db:
        return "\n".join(db.iterdump())


def curl(url: str, *flags: str) -> str:
    """A command that prints what `url` answered, or curl's error."""
    extra = " ".join(flags)
    return f"curl -sS --max-time 20 {extra} {url}; echo"


def pip_python() -> str | None:
    """An interpreter with pip (the one this venv was made from), or None."""
    for python in (Path(os.path.realpath(sys.base_prefix)) / "bin" / "python3",):
        if (python.parent.parent / "lib").exists() and shutil.which(str(python)):
            return str(python)
    return None


needs_curl = pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")

"""Checkpoint cost per prompt on a generated 10,000-file repository, next to a
turn's own time in the same run.

1. The checkpoint alone (`Checkpoints.record`, code and conversation): the first on
   an empty store (every file read, hashed, compressed, written), an incremental one
   after ten files changed (the previous manifest's stat reuse), and one with nothing
   changed; in ms and in bytes added to the store.
2. A whole turn through the app (`build_app`, the native engine, the fake model over
   loopback, the real SQLite store) with checkpoints on and off, rounds alternating;
   the ratio is what checkpoints add to a turn. The turn is a text reply: it writes
   nothing, so it takes its prompt checkpoint only (a turn that writes takes an
   `after` one too: about one more incremental checkpoint). Also its start: from the
   prompt to the reply's first chunk. The model is asked while the checkpoint is
   taken (only tools wait for it), so the start should not move; the turn's end
   waits for the checkpoint, so a turn faster than it (this fake model's) ends with it.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loopd.app import build_app
from loopd.checkpoints.service import Checkpoints, blob_folder
from loopd.policy.reading import DiskReader
from loopd.protocol.events import Prompt, TextBlock
from loopd.store.sqlite import SessionRecord, SqliteStore
from loopd.testing.fake_llm import FakeLLMServer
from loopd.testing.harness import RecordingLink
from loopd.testing.llm_script import Reply

FOLDERS, PER_FOLDER = 500, 20  # 10,000 files
ROUNDS = 5


def make_repo(root: Path) -> None:
    """10,000 small source files in 500 folders (1-3 KiB each), a .gitignore and an
    ignored build folder, as a mid-sized repository has."""
    (root / "build").mkdir(parents=True)
    (root / ".gitignore").write_text("build/\n*.pyc\n")
    (root / "build" / "out.bin").write_bytes(os.urandom(1 << 20))
    for d in range(FOLDERS):
        folder = root / f"pkg{d // 50}" / f"mod{d}"
        folder.mkdir(parents=True)
        for f in range(PER_FOLDER):
            body = f"# file {d}/{f}\n" + "".join(
                f"def f{i}_{d}_{f}(x):\n    return x * {i} + {d}\n" for i in range(20 + f * 2)
            )
            (folder / f"m{f}.py").write_text(body)


def _record(service: Checkpoints, root: str) -> tuple[float, int]:
    used = service.book.used()
    start = time.perf_counter()
    recorded = service.record("s1", "prompt", [root], "now")
    elapsed = (time.perf_counter() - start) * 1000
    assert recorded.point is not None, recorded.note
    return elapsed, service.book.used() - used


def checkpoint_alone(tmp: Path) -> dict[str, float]:
    root = (tmp / "repo").resolve()
    make_repo(root)
    store = SqliteStore(tmp / "data" / "sessions.db")
    store.create(SessionRecord(id="s1", cwd=str(root), created_at="now"))
    reader = DiskReader((), home=str(tmp))
    service = Checkpoints(store, blob_folder(str(tmp / "data")), reader, str(tmp), ())
    first_ms, first_bytes = _record(service, str(root))
    incremental: list[tuple[float, int]] = []
    unchanged: list[tuple[float, int]] = []
    for n in range(ROUNDS):
        for f in range(10):
            (root / "pkg0" / "mod0" / f"m{f}.py").write_text(f"changed {n}\n")
        incremental.append(_record(service, str(root)))
        unchanged.append(_record(service, str(root)))
    store.close()
    return {
        "first_ms": first_ms,
        "first_bytes": float(first_bytes),
        "incremental_ms": statistics.median(ms for ms, _ in incremental),
        "incremental_bytes": statistics.median(float(b) for _, b in incremental),
        "unchanged_ms": statistics.median(ms for ms, _ in unchanged),
        "unchanged_bytes": statistics.median(float(b) for _, b in unchanged),
    }


@dataclass(eq=False, slots=True)
class _Timed(RecordingLink):
    """When the first agent chunk came (perf_counter), since `reset`."""

    first: float | None = None

    async def send_update(self, session_id: str, update: Mapping[str, Any]) -> None:
        if self.first is None and update.get("sessionUpdate") == "agent_message_chunk":
            self.first = time.perf_counter()
        await RecordingLink.send_update(self, session_id, update)


async def _turn_ms(tmp: Path, fake: FakeLLMServer, root: Path, on: bool) -> tuple[float, float]:
    """The turn's time and its start's (to the first chunk), in ms."""
    env = {
        "HOME": str(tmp / "home"),
        "LOOPD_HOME": str(tmp / ("on" if on else "off")),
        "XDG_CONFIG_HOME": str(tmp / ("config-on" if on else "config-off")),
        "ANTHROPIC_BASE_URL": fake.base_url,
        "ANTHROPIC_API_KEY": "unused",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    }
    config = Path(env["XDG_CONFIG_HOME"]) / "loopd" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"[checkpoints]\nenabled = {'true' if on else 'false'}\n")
    app = build_app(env, str(root))
    try:
        link = _Timed()
        view = await app.manager.new_session(str(root), link)
        await app.manager.prompt(view.id, Prompt((TextBlock("warm up"),)), link)
        link.first = None
        start = time.perf_counter()
        await app.manager.prompt(view.id, Prompt((TextBlock("say hi"),)), link)
        end = time.perf_counter()
        assert link.first is not None
        return (end - start) * 1000, (link.first - start) * 1000
    finally:
        await app.aclose()


def turn_with_and_without(tmp: Path) -> dict[str, float]:
    root = (tmp / "repo").resolve()
    make_repo(root)
    on: list[tuple[float, float]] = []
    off: list[tuple[float, float]] = []
    with FakeLLMServer() as fake:
        fake.script("*", *[Reply(text="hi there")] * (4 * ROUNDS))
        for n in range(ROUNDS):
            off.append(asyncio.run(_turn_ms(tmp / f"off{n}", fake, root, False)))
            on.append(asyncio.run(_turn_ms(tmp / f"on{n}", fake, root, True)))
    turn, with_checkpoints = (statistics.median(t for t, _ in runs) for runs in (off, on))
    start, start_with = (statistics.median(s for _, s in runs) for runs in (off, on))
    return {
        "turn_ms": turn,
        "turn_with_checkpoints_ms": with_checkpoints,
        "ratio": with_checkpoints / turn,
        "start_ms": start,
        "start_with_checkpoints_ms": start_with,
        "start_ratio": start_with / start,
    }


def main() -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        alone = checkpoint_alone(Path(a))
        turns = turn_with_and_without(Path(b))
    per_turn = {
        "first_vs_turn": alone["first_ms"] / turns["turn_ms"],
        "incremental_vs_turn": alone["incremental_ms"] / turns["turn_ms"],
    }
    return {
        "checkpoint of 10,000 files": alone,
        "a text turn, checkpoints off vs on (one incremental checkpoint)": turns,
        "checkpoint / turn": per_turn,
    }


if __name__ == "__main__":
    for title, figures in main().items():
        print(f"{title}: " + ", ".join(f"{k}={v:.3f}" for k, v in figures.items()))

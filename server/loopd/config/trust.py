"""Workspace trust: which folders' `.loopd/config.toml` the person has vouched for.

A workspace file arrives with whatever is cloned or whatever a command wrote, so it
is inert until the person trusts that folder (`loopd trust DIR`, or the editor's
question). Trust is recorded in loopd's data dir (`$LOOPD_HOME/trust.json`, a file no
command can reach) as the folder's canonical path and the sha256 of the file's bytes
at the time: once the file changes, the folder is asked about again. As in VS Code,
Claude Code and Codex, trust belongs to the person's machine, never to the folder.

The hash covers exactly the bytes that are then parsed (`WorkspaceFile.read` reads
once), so the file cannot be swapped between the check and the use.

What a trusted file runs is pinned with it (`loopd.config.pins`): its runtimes run
outside the sandbox, with the person's keys, and a sandboxed command may write the
workspace. So trust also records the sha256 of every file beneath the folder that
the runtimes' commands, arguments and environment name (or that the name is
absent), and a change to any of them is a change to the file: asked again. A
program inside the workspace is never run at all (`loopd.executables`); what is
pinned is a script a program outside runs (`python3 tools/agent.py`). What such a
script loads in turn is not pinned: trust a folder whose runtimes run code from it
only as far as you trust every file of that code.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from loopd.config.pins import Pins, fingerprint, pinned_runs
from loopd.config.schema import TrustState
from loopd.config.table import ConfigFileError
from loopd.policy.reading import DiskReader
from loopd.protocol.reading import FileRead, Over, ReadRefused

TRUST_FILE = "trust.json"
MAX_BYTES = 1 << 20
MAX_RECORDS_BYTES = 16 << 20  # trust.json: tens of thousands of folders


@dataclass(frozen=True, slots=True)
class WorkspaceFile:
    """A workspace config file as read once: its folder (canonical), path, bytes and
    their sha256."""

    folder: str
    path: Path
    content: bytes
    sha256: str
    runs: Pins = ()

    @property
    def fingerprint(self) -> str:
        """One digest of the bytes and of what they run, as pinned now."""
        return fingerprint(self.sha256, self.runs)

    @classmethod
    def read(cls, folder: Path, path: Path) -> WorkspaceFile | None:
        """The file's bytes, or None when there is no file. Raises `ConfigFileError`
        when it exists but cannot be read (`read_workspace_file`): it leads out of the folder, is
        not a regular file (a FIFO would block every start) or is over `MAX_BYTES`."""
        match read_workspace_file(folder, path, MAX_BYTES, "refuse"):
            case ReadRefused(problem="missing"):
                return None
            case ReadRefused(reason=reason):
                raise ConfigFileError(path, "(file)", f"cannot be read: {reason}")
            case FileRead(data=content):
                digest = hashlib.sha256(content).hexdigest()
                real = os.path.realpath(folder)
                return cls(real, path, content, digest, pinned_runs(real, content))


def read_workspace_file(
    folder: Path, path: Path, max_bytes: int, over: Over = "cut"
) -> FileRead | ReadRefused:
    """A workspace file read with the rules of every workspace read (`loopd.policy.
    reading`): beneath `folder`, a regular file, at most `max_bytes`."""
    return DiskReader((str(folder),)).read(str(path), max_bytes=max_bytes, over=over)


@dataclass(frozen=True, slots=True)
class TrustStore:
    """The trust records under loopd's data dir. Each call reads the file afresh, so
    a trust given by another loopd (the CLI while an editor runs) is seen at once."""

    data_dir: Path

    @property
    def path(self) -> Path:
        return self.data_dir / TRUST_FILE

    def state(self, file: WorkspaceFile) -> TrustState:
        record = self._records().get(file.folder)
        if record is None:
            return TrustState.UNTRUSTED
        same = record.get("sha256") == file.sha256 and record.get("runs", {}) == dict(file.runs)
        return TrustState.TRUSTED if same else TrustState.CHANGED

    def trust(self, file: WorkspaceFile) -> None:
        """Trust this folder's file as it is now."""
        records = self._records()
        now = datetime.now(UTC).isoformat(timespec="seconds")
        records[file.folder] = {
            "sha256": file.sha256,
            "file": str(file.path),
            "runs": dict(file.runs),
            "trusted_at": now,
        }
        self._write(records)

    def untrust(self, folder: Path) -> bool:
        """Withdraw trust from a folder; False when it was not trusted."""
        records = self._records()
        if records.pop(os.path.realpath(folder), None) is None:
            return False
        self._write(records)
        return True

    def _records(self) -> dict[str, dict[str, Any]]:
        read = DiskReader(("/",)).read(str(self.path), max_bytes=MAX_RECORDS_BYTES)
        try:
            data = json.loads(read.data) if isinstance(read, FileRead) else {}
        except ValueError:
            return {}  # unreadable trust is no trust: fail closed
        folders = data.get("folders") if isinstance(data, Mapping) else None
        if not isinstance(folders, Mapping):
            return {}
        return {k: dict(v) for k, v in folders.items() if isinstance(v, Mapping)}

    def _write(self, records: Mapping[str, Mapping[str, Any]]) -> None:
        """Atomically, private to the person (0600)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"version": 1, "folders": records}, indent=2, sort_keys=True)
        fd, temp = tempfile.mkstemp(prefix=".trust-", dir=self.data_dir)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text + "\n")
            os.replace(temp, self.path)
        except BaseException:
            os.unlink(temp)
            raise

"""What the forwarder's early `initialize` answer is keyed by and read from
(`loopd.daemon.early`): the key moves with the version, the modules and the config;
the line is the SDK's own serialization (`loopd.streams.read_ahead`); the file is
read only when it is a regular file of this user's (a link or a FIFO planted there
is never read)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from loopd.daemon import early
from loopd.streams import read_ahead


def sdk(tmp_path: Path) -> Path:
    folder = tmp_path / "acp"
    (folder / "agent").mkdir(parents=True)
    (folder / "schema.py").write_text("x = 1\n")
    (folder / "agent" / "connection.py").write_text("y = 2\n")
    return folder


def test_the_stamp_moves_with_a_module_and_with_the_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = sdk(tmp_path)
    before = early.code_stamp(str(folder))
    assert early.code_stamp(str(folder)) == before
    (folder / "agent" / "connection.py").write_text("y = 22\n")
    edited = early.code_stamp(str(folder))
    assert edited != before
    monkeypatch.setattr(early, "__version__", "9.9.9")
    assert early.code_stamp(str(folder)) != edited


def test_the_key_moves_with_the_config() -> None:
    keys = {early.key("s", config) for config in (None, b"", b"[daemon]\n", b"[daemon] \n")}
    assert len(keys) == 4
    assert early.key("t", None) != early.key("s", None)


@pytest.mark.parametrize("request_id", [7, 0, -3, "a", 'é"\\\n', 2**40])
def test_the_line_is_the_sdks_own_serialization(request_id: int | str) -> None:
    result = {"protocolVersion": 1, "agentInfo": {"name": "loopd", "title": "é"}}
    sdk_line = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result},
                          separators=(",", ":")) + "\n"  # fmt: skip
    text = json.dumps(result, separators=(",", ":"))
    assert read_ahead.answer_line(request_id, text) == sdk_line.encode()


def test_answers_under_another_key_are_dropped_and_the_file_is_private(tmp_path: Path) -> None:
    path = str(tmp_path / "answers.json")
    early.record(path, "old", {"a": 1}, "{}")
    last = early.MAX_ANSWERS + 2
    for n in range(last + 1):
        early.record(path, "new", {"n": n}, f'{{"n":{n}}}')
    body = json.loads(Path(path).read_text())
    assert body["key"] == "new"
    assert len(body["answers"]) == early.MAX_ANSWERS
    assert body["answers"][0] == {"params": {"n": last}, "result": f'{{"n":{last}}}'}
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["answers.json"]  # no temporary left


def test_a_link_or_a_fifo_in_the_files_place_is_never_read(tmp_path: Path) -> None:
    real = str(tmp_path / "real.json")
    early.record(real, "k", {"a": 1}, "{}")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    for path in (link, fifo):  # with nothing read, stdin is not read either
        assert early.answer_early(str(path), "k") is None


def test_a_read_ahead_survives_the_hello() -> None:
    read = read_ahead.ReadAhead(b'{"id":1}\n\xff', 1, b"answer\n")
    assert read_ahead.ReadAhead.of(json.loads(json.dumps(read.to_wire()))) == read
    assert read_ahead.ReadAhead.of(None) is None
    with pytest.raises(ValueError):
        read_ahead.ReadAhead.of({"pending": "zz"})
    with pytest.raises(ValueError):
        read_ahead.ReadAhead.of({"pending": "", "id": True, "answer": "x"})

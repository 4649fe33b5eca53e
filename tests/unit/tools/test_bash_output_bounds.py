"""A command that prints without end costs bounded memory, bounded updates and a
bounded result; its whole output is in a private file the shown result names."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tooltest import RecordingProgress

from loopd.engine.ports import ToolCall
from loopd.protocol.events import TextBlock
from loopd.tools import ToolEnv, ToolRegistry

TOTAL = 30_000_000  # a thousand times the 30k the model reads


async def run_flood(env: ToolEnv, progress: RecordingProgress) -> tuple[str, str]:
    command = f"yes 0123456789abcdef | head -c {TOTAL}; echo; echo THE END"
    result = await ToolRegistry(env).run(
        ToolCall("toolu_f/1", "bash", {"command": command}), progress
    )
    block = result.content[0]
    assert isinstance(block, TextBlock)
    return result.output, block.text


async def test_a_flood_is_cut_for_the_model_the_editor_and_the_updates(tmp_path: Path) -> None:
    outputs = tmp_path / "data" / "outputs" / "sess"
    env = ToolEnv(roots=(str(tmp_path),), outputs_dir=str(outputs))
    progress = RecordingProgress()
    for_model, shown = await run_flood(env, progress)
    limits = env.limits

    assert len(for_model) < limits.output_max_chars + 500
    assert for_model.startswith("0123456789abcdef\n") and "THE END" in for_model
    assert "narrow the command" in for_model
    assert len(shown) < limits.shown_max_chars + 1_000
    sent = sum(len(c[0].text) for c in progress.calls if isinstance(c[0], TextBlock))
    assert sent <= limits.live_budget_chars + limits.live_max_chars + 500
    assert "live output stops here" in progress.last_text

    spill = outputs / "toolu_f_1.log"  # named after the call, made safe for a file name
    assert f"the full output is in {spill}" in shown
    assert spill.stat().st_size == TOTAL + len("\nTHE END\n")
    assert stat.S_IMODE(spill.stat().st_mode) == 0o600
    assert stat.S_IMODE(outputs.stat().st_mode) == 0o700
    await env.aclose()


async def test_output_that_fits_leaves_no_file(tmp_path: Path) -> None:
    outputs = tmp_path / "outputs"
    env = ToolEnv(roots=(str(tmp_path),), outputs_dir=str(outputs))
    result = await ToolRegistry(env).run(
        ToolCall("c9", "bash", {"command": "echo small"}), RecordingProgress()
    )
    assert result.output == "small\n\nExit code: 0"
    assert os.listdir(outputs) == []
    assert result.raw_output is not None and "full_output" not in result.raw_output

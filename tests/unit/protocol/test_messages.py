"""Message parts to and from the store's JSON."""

from __future__ import annotations

from loopd.protocol.messages import ImagePart, ToolResultPart, part_from_json, part_to_json


def test_a_tool_results_images_survive_the_store() -> None:
    part = ToolResultPart("t1", "a dot", images=(ImagePart("image/png", "iVBOR"),))
    assert part_from_json(part_to_json(part)) == part
    plain = ToolResultPart("t2", "text only")
    assert "images" not in part_to_json(plain)  # rows written before images read the same
    assert part_from_json(part_to_json(plain)) == plain

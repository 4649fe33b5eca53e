"""Which prompts are commands the person typed (`!cmd`) and which go to the model."""

import pytest

from loopd.protocol.events import ImageBlock, Prompt, TextBlock
from loopd.runtimes.native.runtime import typed_command


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ("!ls -la", "ls -la"),
        ("  ! make test  ", "make test"),
        ("!", None),
        ("!   ", None),
        ("run !ls", None),
        ("ls", None),
    ],
)
def test_a_single_text_block_starting_with_a_bang_is_a_command(
    text: str, command: str | None
) -> None:
    assert typed_command(Prompt((TextBlock(text),))) == command


def test_a_prompt_with_more_than_text_goes_to_the_model() -> None:
    prompt = Prompt((TextBlock("!ls"), ImageBlock("aGk=", "image/png", None)))
    assert typed_command(prompt) is None

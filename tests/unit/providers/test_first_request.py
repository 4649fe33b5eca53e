"""A provider's first request loads no module: what httpx would import when it opens
its first connection (anyio's asyncio backend) is loaded with the provider's client,
while the app is built, not between the first prompt and its request.

Run in a fresh interpreter: this test process has long imported all of it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from loopd.testing.fake_llm import FakeLLMServer, Reply

FIRST_REQUEST = """
import asyncio, json, sys
from loopd.protocol.messages import user_text
from loopd.protocol.model import ModelRequest
from loopd.providers import make_provider

async def main(kind, url):
    provider = make_provider(kind, base_url=url, api_key="sk-test")
    before = set(sys.modules)
    async for _ in provider.stream(ModelRequest("fake-model", "", (user_text("hi"),))):
        pass
    loaded = sorted(set(sys.modules) - before)
    await provider.aclose()
    return loaded

print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2]))))
"""


@pytest.mark.parametrize("kind", ["anthropic", "openai_chat", "openai_responses"])
def test_the_first_request_imports_nothing(kind: str) -> None:
    with FakeLLMServer() as fake:
        fake.script("*", Reply(text="hello"))
        url = fake.base_url if kind == "anthropic" else fake.openai_base_url
        done = subprocess.run(
            [sys.executable, "-c", FIRST_REQUEST, kind, url],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert len(fake.requests) == 1  # the request was made, and answered
    assert json.loads(done.stdout) == []

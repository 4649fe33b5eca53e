"""Network by domain, in the same run: what the proxy costs a command.

- start: `true` in the bubblewrap tier with the proxy bound in (a lease, the helper,
  the relay) against without it; the ratio is the price of the helper and relay;
- download: curl fetching 64 MiB from a loopback server through the proxy (relay,
  Unix socket, host proxy) against curl on the host straight to it.

Rounds alternate between the subjects so drift hits both alike. Needs bwrap and curl;
every byte stays on loopback (the test hook maps the name to the local server).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import tempfile
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Thread

from loopd.policy.domains import DomainLists
from loopd.policy.modes import Mode
from loopd.policy.network import NetworkGrant
from loopd.policy.tiers import Tier
from loopd.protocol.approvals import ApprovalDecision, ApprovalRequest
from loopd.sandbox.base import CommandSandbox, CommandSpec
from loopd.sandbox.netgate import NetworkGate
from loopd.sandbox.probe import probe_sandbox, select_sandbox
from loopd.sandbox.resolve import HookedNetwork

ROUNDS = 7
SIZE = 64 * 1024 * 1024
PUBLIC = "93.184.216.34"


class _Blob(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(SIZE))
        self.end_headers()
        chunk = b"x" * (1024 * 1024)
        for _ in range(SIZE // len(chunk)):
            self.wfile.write(chunk)

    def log_message(self, *args: object) -> None:
        pass


async def _refuse(request: ApprovalRequest) -> ApprovalDecision:
    return ApprovalDecision.REJECT_ONCE


async def _run(sandbox: CommandSandbox, ws: str, script: str, proxy: str | None) -> float:
    spec = CommandSpec(("sh", "-c", script), ws, (ws,), False, proxy)
    prepared = sandbox.prepare(spec)
    began = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        *prepared.argv, env=dict(prepared.env), cwd=ws, preexec_fn=prepared.preexec
    )
    if await process.wait() != 0:
        raise RuntimeError(f"{script} failed")
    return time.perf_counter() - began


async def _measure(port: int) -> dict[str, dict[str, float]]:
    probe = probe_sandbox(which=[Tier.BWRAP])
    if probe.best is not Tier.BWRAP:
        raise RuntimeError("needs bubblewrap")
    ws = tempfile.mkdtemp(prefix="loopd-bench-")
    sandbox = select_sandbox(Mode.ASK, probe, [ws], NetworkGrant(), os.environ)
    hook = json.dumps({"resolve": {"blob.test": PUBLIC}, "dial": {f"{PUBLIC}:80": port}})
    gate = NetworkGate(
        DomainLists.parse(["blob.test"], ()), _refuse, "bench", HookedNetwork.parse(hook)
    )
    fetch = "curl -sS -o /dev/null http://{}/blob"
    starts: dict[str, list[float]] = {"plain": [], "proxied": []}
    loads: dict[str, list[float]] = {"host": [], "proxied": []}
    for _ in range(ROUNDS):
        starts["plain"].append(await _run(sandbox, ws, "true", None))
        async with gate.lease("bench", "true") as lease:
            starts["proxied"].append(await _run(sandbox, ws, "true", lease.socket))
        began = time.perf_counter()
        direct = await asyncio.create_subprocess_shell(fetch.format(f"127.0.0.1:{port}"))
        await direct.wait()
        loads["host"].append(time.perf_counter() - began)
        async with gate.lease("bench", "curl") as lease:
            fetched = await _run(sandbox, ws, fetch.format("blob.test"), lease.socket)
            loads["proxied"].append(fetched)
    start = {k: statistics.median(v) for k, v in starts.items()}
    load = {k: statistics.median(v) for k, v in loads.items()}
    mib = SIZE / 1024 / 1024
    return {
        "command start, proxied/plain": {**start, "ratio": start["proxied"] / start["plain"]},
        f"{mib:.0f} MiB download, MiB/s": {
            "host": mib / load["host"],
            "proxied": mib / load["proxied"],
            "ratio": load["host"] / load["proxied"],
        },
    }


def main() -> dict[str, dict[str, float]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Blob)
    Thread(target=server.serve_forever, daemon=True).start()
    try:
        return asyncio.run(_measure(int(server.server_address[1])))
    finally:
        server.shutdown()

"""Network by domain through `loopd run`: with `[sandbox] allowed_domains` set, a
command in the bubblewrap sandbox reaches listed hosts through loopd's proxy (HTTP,
CONNECT, SOCKS5; curl and pip unchanged), and nothing else: not an unlisted host
(asked; refused headless, naming it), not a listed name that resolves to loopback or
metadata, not a name that rebinds between the check and the connection, not raw TCP
past the proxy. Every connection is listed in the call's result and the journal.

All traffic stays on loopback: the test hook (`netrig`) maps the names to fake
registries. Every case is its own `loopd run`, all started at once.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from loopd.testing.fake_llm import Reply
from tests.e2e.safety.conftest import Run, calls, loopd_run, needs_bwrap
from tests.e2e.safety.netrig import (
    HELLO,
    INTERNAL,
    WHEEL,
    WHEEL_NAME,
    NetBox,
    Registries,
    curl,
    journal,
    needs_curl,
    pip_python,
    registries,
)

pytestmark = [pytest.mark.e2e, needs_bwrap, needs_curl]
DONE = Reply(text="done")


def bash(command: str, **extra: object) -> Reply:
    return calls(("bash", {"command": command, **extra}))


def pip_download(python: str) -> str:
    return (
        f"{python} -m pip download demo-pkg==1.0 --no-deps --no-cache-dir "
        "--disable-pip-version-check --index-url http://pypi.test/simple "
        "--trusted-host pypi.test -d dl"
    )


@dataclass(frozen=True)
class Case:
    replies: list[Reply]
    flags: tuple[str, ...] = ()


def cases(nets: Registries, python: str) -> dict[str, Case]:
    raw = f"exec 3<>/dev/tcp/127.0.0.1/{nets.registry.port} && echo CONNECTED"
    return {
        "listed": Case(
            [
                bash(
                    curl("http://pypi.test/hello?via=http")
                    + "; "
                    + curl("http://pypi.test/hello?via=connect", "--proxytunnel")
                    + "; "
                    + curl("http://pypi.test/hello?via=socks", '--proxy "$ALL_PROXY"')
                ),
                DONE,
            ]
        ),
        "pip": Case([bash(pip_download(python)), DONE]),
        "private": Case(
            [
                bash(
                    "; ".join(
                        curl(url)
                        for url in (
                            "http://loop.test/",
                            "http://meta.test/latest/meta-data/",
                            "http://127.0.0.1/",
                            "http://169.254.169.254/latest/meta-data/",
                        )
                    )
                ),
                DONE,
            ],
            ("--yes",),  # even a yes to the literals reaches nothing private
        ),
        "rebind": Case([bash(curl("http://rebind.test/hello?via=rebind")), DONE]),
        "raw": Case([bash(raw), bash(raw, network=True), DONE], ("--yes",)),
        "redirect": Case([bash(curl("http://pypi.test/moved", "-L")), DONE]),
        "unlisted_headless": Case([bash(curl("http://unlisted.test/hello?via=headless")), DONE]),
        "unlisted_yes": Case([bash(curl("http://unlisted.test/hello?via=yes")), DONE], ("--yes",)),
    }


@dataclass(frozen=True)
class Outcome:
    box: NetBox
    run: Run
    nets: Registries


@pytest.fixture(scope="module")
def python_with_pip() -> str:
    python = pip_python()
    found = python and subprocess.run([python, "-m", "pip", "--version"], capture_output=True)
    if not python or not found or found.returncode != 0:
        pytest.skip("needs an interpreter with pip (the one this venv was made from)")
    return python


@pytest.fixture(scope="module")
def outcomes(
    tmp_path_factory: pytest.TempPathFactory, python_with_pip: str
) -> Iterator[dict[str, Outcome]]:
    with registries() as nets:
        table = cases(nets, python_with_pip)
        boxes = {name: NetBox.within(tmp_path_factory.mktemp(name), nets) for name in table}

        async def everything() -> list[Run]:
            return await asyncio.gather(
                *(loopd_run(boxes[n], c.replies, *c.flags) for n, c in table.items())
            )

        runs = asyncio.run(everything())
        yield {n: Outcome(boxes[n], r, nets) for n, r in zip(table, runs, strict=True)}


def results(run: Run) -> str:
    return "\n".join(run.tool_results())


def test_a_listed_host_is_reached_over_http_connect_and_socks5(
    outcomes: dict[str, Outcome],
) -> None:
    box, run, nets = outcomes["listed"].box, outcomes["listed"].run, outcomes["listed"].nets
    assert run.code == 0, run.err
    said = results(run)
    assert said.count(HELLO) == 3, said
    assert {"/hello?via=http", "/hello?via=connect", "/hello?via=socks"} <= set(nets.registry.hits)
    assert "pypi.test:80 allowed (pypi.test) (x3)" in said
    assert "pypi.test:80 allowed (pypi.test)" in journal(box)


def test_pip_downloads_from_a_listed_index(outcomes: dict[str, Outcome]) -> None:
    box, run = outcomes["pip"].box, outcomes["pip"].run
    assert run.code == 0, run.err
    downloaded = box.ws / "dl" / WHEEL_NAME
    assert downloaded.exists(), results(run)
    assert downloaded.read_bytes() == WHEEL
    assert "pypi.test:80 allowed (pypi.test)" in results(run)


def test_listed_names_resolving_to_loopback_or_metadata_are_refused(
    outcomes: dict[str, Outcome],
) -> None:
    run, nets = outcomes["private"].run, outcomes["private"].nets
    said = results(run)
    assert nets.internal.hits == [] and INTERNAL not in said
    assert "loop.test:80 refused (loop.test): it resolves to 127.0.0.1, a loopback address" in said
    assert (
        "meta.test:80 refused (meta.test): it resolves to 169.254.169.254, a cloud metadata" in said
    )
    assert "127.0.0.1:80 refused (asked: allowed): 127.0.0.1, a loopback address" in said
    assert "169.254.169.254:80 refused (asked: allowed): 169.254.169.254, a cloud metadata" in said
    assert "loopd refused this connection: loop.test:80" in said  # what curl printed


def test_a_name_that_rebinds_is_dialled_at_the_address_that_was_checked(
    outcomes: dict[str, Outcome],
) -> None:
    run, nets = outcomes["rebind"].run, outcomes["rebind"].nets
    assert HELLO in results(run)
    assert "/hello?via=rebind" in nets.registry.hits
    assert nets.internal.hits == []


def test_raw_tcp_past_the_proxy_reaches_nothing(outcomes: dict[str, Outcome]) -> None:
    run = outcomes["raw"].run
    said = results(run)
    assert "CONNECTED" not in said
    assert said.count("Connection refused") >= 2, said


def test_an_unlisted_host_is_refused_headless_and_the_refusal_names_it(
    outcomes: dict[str, Outcome],
) -> None:
    box, run, nets = (outcomes["unlisted_headless"].box, outcomes["unlisted_headless"].run,
                      outcomes["unlisted_headless"].nets)  # fmt: skip
    said = results(run)
    assert "/hello?via=headless" not in nets.registry.hits
    assert "unlisted.test:80 refused (asked: rejected)" in said
    assert "loopd refused this connection: unlisted.test:80" in said
    assert "unlisted.test:80 refused" in journal(box)
    assert "Connect to unlisted.test:80" in run.err  # the rejection named the host


def test_an_unlisted_host_asked_and_allowed_once_is_reached(outcomes: dict[str, Outcome]) -> None:
    run, nets = outcomes["unlisted_yes"].run, outcomes["unlisted_yes"].nets
    assert HELLO in results(run)
    assert "/hello?via=yes" in nets.registry.hits
    assert "unlisted.test:80 allowed (asked: allowed)" in results(run)


def test_a_redirect_to_an_unlisted_host_is_judged_as_that_host(
    outcomes: dict[str, Outcome],
) -> None:
    """Not named in the issue: a listed host answers with a redirect to an unlisted
    one; curl follows it through the proxy, which judges the new host on its own."""
    run, nets = outcomes["redirect"].run, outcomes["redirect"].nets
    said = results(run)
    assert "/moved" in nets.registry.hits
    assert "/hello?via=redirect" not in nets.registry.hits and HELLO not in said
    assert "pypi.test:80 allowed (pypi.test)" in said
    assert "unlisted.test:80 refused (asked: rejected)" in said

"""The command line: exit codes documented in --help, -v on either side of the
subcommand, completion scripts generated from the parser and run by real shells."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from loopd.cli.completion import bash, fish, specs, zsh
from loopd.cli.parser import COMMANDS, build_parser
from tests.needs import missing


def test_help_documents_the_exit_codes() -> None:
    text = build_parser().format_help()
    for line in ("0    success", "1    the turn failed", "2    usage or configuration", "130"):
        assert line in text


@pytest.mark.parametrize(
    "argv", [["-v", "doctor"], ["doctor", "-v"], ["doctor", "--verbose"], ["-v", "doctor", "-v"]]
)
def test_verbose_works_before_and_after_the_subcommand(argv: list[str]) -> None:
    assert build_parser().parse_args(argv).verbose is True


def test_verbose_is_off_by_default() -> None:
    assert build_parser().parse_args(["doctor"]).verbose is False


def complete_bash(words: list[str]) -> list[str]:
    """What bash offers for `loopd <words>` with the generated script loaded."""
    script = bash(specs(build_parser()))
    line = " ".join(["loopd", *words])
    program = (
        f"{script}\nCOMP_WORDS=({line}); COMP_CWORD={len(words)}; "
        "_loopd; printf '%s\\n' \"${COMPREPLY[@]}\""
    )
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, check=True)
    return done.stdout.split()


def test_bash_completes_subcommands_options_and_choices() -> None:
    assert set(complete_bash(["''"])) >= {command.name for command in COMMANDS}
    assert complete_bash(["do"]) == ["doctor"]
    assert complete_bash(["run", "--r"]) == ["--runtime"]
    assert complete_bash(["-v", "run", "--y"]) == ["--yes"]
    assert complete_bash(["completion", "''"]) == [
        "-h",
        "--help",
        "-v",
        "--verbose",
        "bash",
        "zsh",
        "fish",
    ]
    assert complete_bash(["sessions", "sh"]) == ["show"]
    assert complete_bash(["config", "s"]) == ["show", "schema"]


@pytest.mark.parametrize(("shell", "render"), [("zsh", zsh), ("fish", fish)])
def test_zsh_and_fish_scripts_parse_and_name_every_command(shell: str, render: object) -> None:
    script = render(specs(build_parser()))  # type: ignore[operator]
    for command in COMMANDS:
        assert command.name in script
    assert "--runtime" in script or "-l runtime" in script
    if shutil.which(shell) is None:
        raise missing(f"{shell} is not installed; the script was generated but not parsed")
    done = subprocess.run([shell, "-n"], input=script, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_fish_completes_subcommands_and_options() -> None:
    if shutil.which("fish") is None:
        raise missing("fish is not installed")
    script = fish(specs(build_parser()))

    def offered(line: str) -> list[str]:
        program = f"{script}\ncomplete -C '{line}'"
        done = subprocess.run(["fish", "-c", program], capture_output=True, text=True, check=True)
        return [row.split("\t")[0] for row in done.stdout.splitlines()]

    assert offered("loopd do") == ["doctor"]
    assert offered("loopd run --ru") == ["--runtime"]
    assert "schema" in offered("loopd config ")

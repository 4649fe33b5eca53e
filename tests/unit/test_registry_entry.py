"""The ACP registry entry in `registry/loopd/`: the registry's format and checks
(entry fields, a uvx package pinned to this version, a 16x16 monochrome icon)."""

from __future__ import annotations

import json
import re
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import loopd

ROOT = Path(__file__).resolve().parents[2]
ENTRY = ROOT / "registry" / "loopd"


def test_the_entry_describes_this_package() -> None:
    entry = json.loads((ENTRY / "agent.json").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert re.fullmatch(r"[a-z][a-z0-9-]*", entry["id"])
    assert entry["id"] == ENTRY.name
    assert entry["version"] == loopd.__version__
    assert entry["license"] == "MIT"
    assert set(entry) >= {"name", "description", "repository", "authors", "distribution"}
    assert list(entry["distribution"]) == ["uvx"]
    uvx = entry["distribution"]["uvx"]
    assert uvx["package"] == f"{project['name']}=={loopd.__version__}"
    assert uvx["args"] == ["acp"]
    assert project["scripts"][project["name"]] == "loopd.cli:main"  # what uvx runs


def test_the_icon_is_16_square_and_takes_the_theme_colour() -> None:
    text = (ENTRY / "icon.svg").read_text()
    svg = ET.fromstring(text)
    assert (svg.get("width"), svg.get("height"), svg.get("viewBox")) == ("16", "16", "0 0 16 16")
    colours = re.findall(r'\b(?:fill|stroke)\s*=\s*"([^"]+)"', text)
    assert colours and set(colours) <= {"currentColor", "none"}
    assert "currentColor" in colours
    assert "style=" not in text

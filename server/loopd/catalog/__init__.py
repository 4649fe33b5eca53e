"""The runtime catalog: which runtimes a session may run on, and how a choice resolves.

`build_catalog` (pure, lookups injected) or `discover_catalog` (this machine) makes a
`RuntimeCatalog`; `catalog.resolve(runtime, model, effort, agent=...)` gives a
`Resolved` tuple, chosen among the entries that agent role admits, whose
`identity()` a session records. See `catalog.py` for the resolution rules,
`agents.py` for the agent roles (`main`, `explore`, any the config names), `build.py`
for where entries come from and `roles.py` for how the config gives the roles.
"""

from loopd.catalog.agents import EXPLORE_AGENT, MAIN_AGENT, AgentScope
from loopd.catalog.build import CatalogBuild, VersionOf, Which, build_catalog, ollama_url
from loopd.catalog.catalog import Resolved, RuntimeCatalog
from loopd.catalog.discovery import (
    cli_version,
    discover_catalog,
    parse_version,
    path_which,
    probed_version,
)
from loopd.catalog.entry import (
    CredentialMode,
    ModelOption,
    ProviderRef,
    RuntimeEntry,
    SelectionKind,
    Source,
)
from loopd.catalog.errors import (
    CatalogError,
    InvalidCatalog,
    UnknownAgent,
    UnknownHarness,
    UnknownModel,
    UnknownRuntime,
    UnsupportedEffort,
)
from loopd.catalog.identity import RuntimeIdentity
from loopd.catalog.render import catalog_to_json, catalog_to_text
from loopd.catalog.roles import Skipped

__all__ = [
    "EXPLORE_AGENT",
    "MAIN_AGENT",
    "AgentScope",
    "CatalogBuild",
    "CatalogError",
    "CredentialMode",
    "InvalidCatalog",
    "ModelOption",
    "ProviderRef",
    "Resolved",
    "RuntimeCatalog",
    "RuntimeEntry",
    "RuntimeIdentity",
    "SelectionKind",
    "Skipped",
    "Source",
    "UnknownAgent",
    "UnknownHarness",
    "UnknownModel",
    "UnknownRuntime",
    "UnsupportedEffort",
    "VersionOf",
    "Which",
    "build_catalog",
    "catalog_to_json",
    "catalog_to_text",
    "cli_version",
    "discover_catalog",
    "ollama_url",
    "parse_version",
    "path_which",
    "probed_version",
]

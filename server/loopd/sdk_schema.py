"""The ACP SDK's schema, built lazily: each model's validator is made on its first use.

`acp.schema` defines some 300 pydantic models. Built as the SDK configures them, they
cost a start ~0.9 s of this machine's time: every field's docstring is read back
from the module's source (`use_attribute_docstrings`, only of use to a JSON schema),
and every model's validator and serializer is compiled at import, though one
connection uses a few dozen. Those ~0.9 s are most of a cold `loopd acp` start.

`install` puts a finder first on `sys.meta_path` that loads `acp.schema` as usual,
with two settings on the SDK's model base (and on `RootModel` while the module runs):
`defer_build` and no attribute docstrings. The classes are the SDK's own and say the
same on the wire; pydantic builds each one's validator and serializer the first time
it is used. An SDK laid out otherwise (no `acp._schema_base.BaseModel`) is loaded
as it is, only slower: a speed-up never stands between a person and `import acp`.
Standard library only, and acting on that one module: every loopd
process installs it (see `loopd/__init__.py`), the forwarder's start costs nothing.
"""

from __future__ import annotations

import sys
from importlib.machinery import ModuleSpec, PathFinder
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:  # `importlib.abc` costs a start ~30 ms: the finder is duck-typed
    from collections.abc import Sequence
    from importlib.abc import Loader
    from types import ModuleType

    from pydantic import ConfigDict

SCHEMA = "acp.schema"


class _LazySchema:
    """A `sys.meta_path` finder for `acp.schema` alone."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != SCHEMA:
            return None
        spec = PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = cast("Loader", _Lazily(spec.loader))
        return spec


class _Lazily:
    """The SDK's loader, with the lazy settings in force while the module runs."""

    def __init__(self, loader: Loader) -> None:
        self._loader = loader

    def __getattr__(self, name: str) -> object:
        return getattr(self._loader, name)  # get_source, get_code, is_package ...

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        from pydantic import RootModel

        try:
            from acp._schema_base import BaseModel as base

            base.model_config = _lazy(base.model_config)  # the SDK's base: models inherit it
        except (ImportError, AttributeError):  # another SDK layout: built as it says, slower
            self._loader.exec_module(module)
            return
        saved = RootModel.model_config
        RootModel.model_config = _lazy(saved)  # pydantic's own, so only while the SDK's load
        try:
            self._loader.exec_module(module)
        finally:
            RootModel.model_config = saved


def _lazy(config: ConfigDict) -> ConfigDict:
    lazy = config.copy()
    lazy["defer_build"] = True
    lazy["use_attribute_docstrings"] = False
    return lazy


def install() -> None:
    """Build the SDK's schema lazily in this process (idempotent). Must run before
    anything imports `acp`; a schema already imported stays as it was built."""
    if not any(isinstance(f, _LazySchema) for f in sys.meta_path):
        sys.meta_path.insert(0, _LazySchema())

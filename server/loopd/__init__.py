"""loopd: a coding-agent server for editors (ACP for Zed, LSP for VS Code and Neovim)."""

from loopd.sdk_schema import install as _lazy_sdk_schema

__version__ = "0.1.0"

_lazy_sdk_schema()  # before anything imports the ACP SDK (see `loopd.sdk_schema`)

"""loopd: a coding-agent server for editors (ACP for Zed, LSP for VS Code and Neovim)."""

__version__ = "0.1.0"

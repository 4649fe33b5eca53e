"""loopd.lsp"""

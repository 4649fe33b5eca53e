"""loopd.acp"""

"""loopd.providers"""

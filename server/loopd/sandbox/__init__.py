"""loopd.sandbox"""

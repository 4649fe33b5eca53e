"""loopd.store"""

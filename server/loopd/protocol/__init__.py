"""loopd.protocol"""

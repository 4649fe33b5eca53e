"""loopd.runtimes"""

"""loopd.engine"""

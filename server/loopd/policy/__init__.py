"""loopd.policy"""

"""loopd.testing"""

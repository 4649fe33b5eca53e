"""loopd.config"""

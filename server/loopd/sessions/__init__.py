"""loopd.sessions"""

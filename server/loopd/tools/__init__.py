"""loopd.tools"""

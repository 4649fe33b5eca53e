"""loopd.catalog"""

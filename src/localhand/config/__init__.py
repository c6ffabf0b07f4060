"""Settings: reading, merging and validating them (files, variables, flags) and which keys a
workspace file may give.
"""

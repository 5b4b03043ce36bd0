"""Applications on top of the library: command-line subcommands and instructor tools.

Each module here only parses input, calls the library and formats what comes back; no physics.
"""

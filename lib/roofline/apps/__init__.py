"""Apps on top of the library: command-line subcommands and instructor tools."""

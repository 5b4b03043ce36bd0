"""Applications on top of the library: command-line tools and the instructor dashboard."""

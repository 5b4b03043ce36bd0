"""Figures and readouts drawn on the library's numbers (matplotlib lives here, never in the numbers)."""

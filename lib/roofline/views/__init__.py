"""Figures and readouts drawn from the library's numbers (matplotlib lives here, never in the physics)."""

"""Figures and readouts built on the library's numbers (matplotlib, no widgets)."""

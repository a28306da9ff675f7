"""Runs (system versions) and their outputs."""

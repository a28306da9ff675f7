"""Annotation and score exports of observability platforms imported onto the outputs of a run."""

"""Metrics behind one adapter interface, a lazy catalogue, and the scoring job.

Importing this package loads no metric library: adapters are ``"module:Class"`` targets imported on first
use, so the catalogue is readable in milliseconds.
"""

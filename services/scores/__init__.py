"""Metric scores: imported from elsewhere or computed by the service; the per-output score table."""

"""Correlation reports: agreement, the three analyses, comparisons with the best metric, figure, HTML."""

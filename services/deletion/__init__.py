"""Undo: deleting a dataset, a run, a rater's ratings on a run, an imported metric's scores on a run, or
a job's results."""

"""Raters, rubrics, human ratings, reference scores and inter-rater agreement."""

"""Datasets, documents, questions and their reference passages."""

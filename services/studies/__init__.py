"""One-step import of a team's own study: Ragas, RAGChecker, DeepEval or plain files, with passages given as
text located in the corpus."""

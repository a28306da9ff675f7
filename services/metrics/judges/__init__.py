"""Adapters of the LLM-judge libraries (Ragas, DeepEval, Opik, RAGChecker), all calling the judge gateway."""

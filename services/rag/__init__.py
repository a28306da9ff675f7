"""The service's own RAG system: indexes per dataset, retrieval, generation, runs over a dataset."""

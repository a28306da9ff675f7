"""Domain logic of ragmeta. Nothing here imports FastAPI."""

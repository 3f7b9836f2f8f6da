"""Documents: what users ingest, their chunks, and where each extracted memory came from."""

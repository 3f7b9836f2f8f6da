"""Search over memories and, through the same planner and fused query, over document chunks:
plan.py chooses how each leg runs, repo.py is the SQL, service.py the POST /v1/search use case."""

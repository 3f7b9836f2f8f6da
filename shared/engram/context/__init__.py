"""POST /v1/context: everything an agent needs for one turn, in one call and within a token budget."""

"""Working memory: versioned, optionally expiring JSON values under a plan or agent scope."""

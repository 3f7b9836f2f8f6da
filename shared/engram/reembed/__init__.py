"""Moving a tenant's vectors to another embedding model (`engram reembed`)."""

"""Change events: the outbox the database fills after each committed change (migration 0016), webhooks
that receive them locally, and the relay that delivers them (webhooks, or EventBridge in AWS)."""

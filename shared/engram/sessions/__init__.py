"""Conversations (episodic memory): sessions of one user/agent pair and their ordered messages."""

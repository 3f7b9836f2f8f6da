"""Profiles: a prompt-ready summary of what is known about a user or an agent."""

"""Accounts, roles, API keys, browser sessions and login rate limiting."""

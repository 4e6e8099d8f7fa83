"""Reusable test plumbing: a real local HTTP server (httpserver) and a fake engine launch (fake_launch)."""

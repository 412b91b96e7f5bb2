"""Builders of tiny random VLMs, one module per architecture family."""

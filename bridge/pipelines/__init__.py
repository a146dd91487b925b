"""Pipelines: pre-process inputs, batch engine calls across sessions, post-process rows into frames."""

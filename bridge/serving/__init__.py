"""The server: engines loaded at start, sessions, the per-model batching schedulers, metrics."""

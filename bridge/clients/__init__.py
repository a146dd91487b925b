"""Clients of the wire protocol: the harness, live sources and the outputs."""

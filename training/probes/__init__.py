"""Probes of the machine and the engines: CUDA facts, engine call timing."""

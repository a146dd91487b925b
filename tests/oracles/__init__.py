"""Per-session reference versions of batched rules: the oracles that tests compare the served code with.

They are not served; they stay simple on purpose, one session and one frame at a time."""

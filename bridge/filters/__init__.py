"""Per-session post-processing: One-Euro and low-pass smoothing, joint limits."""

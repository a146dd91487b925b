"""Per-session state as slot-indexed rows of batched stores, one model for every pipeline."""

"""Motion post-processing, limits, foot planting and the choreographer."""

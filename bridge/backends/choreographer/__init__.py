"""The rule-based choreographer served as a reference backend."""

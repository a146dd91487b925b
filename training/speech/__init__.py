"""The viseme classifier: training and scoring."""

"""The lab: training, scoring, song generation and model export (not in the wheel)."""

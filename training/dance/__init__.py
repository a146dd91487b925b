"""The dance student: data, training, scoring and export."""

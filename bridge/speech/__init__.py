"""Speech to face: visemes, mouth blendshapes and the data that trains and tests them (docs/speech.md)."""

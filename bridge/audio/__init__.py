"""Audio analysis: resampling, music features, onsets, beats and speech features."""

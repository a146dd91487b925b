"""Songs with known beats: synthetic, MIDI-rendered and recorded."""

"""Image codecs for the bridge's inputs (JPEG), independent of sockets and pipelines."""

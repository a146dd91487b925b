"""serve --workers: the front end, the worker processes and the frames forwarder."""

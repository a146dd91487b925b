"""The ZeroMQ sockets the bridge binds (ROUTER for requests, PUB for frames) and their CURVE security."""

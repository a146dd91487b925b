"""Live sources: a camera, a video file, a microphone or an audio file feeding a bridge session.

A source is a client of the bridge like any other (it speaks the wire contract over loopback through
bridge.clients.harness.client), so its sessions are published to every output exactly as a client's are and a
source can never reach into a session it did not open. `serve --camera/--video/--microphone/--audio`
starts one feeder thread per source (bridge.clients.sources.feeder).
"""

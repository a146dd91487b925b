"""The live viewer: `serve --viewer` serves a page that renders every open session as a VRM avatar."""

//! OpenHands Agent Server: the SDK behind REST + WebSocket, wire-compatible with the reference server.

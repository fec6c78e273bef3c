//! The protocol versions this crate speaks: the modern era (per-request
//! `_meta`, `server/discover`) and the legacy era (the `initialize`
//! handshake), each newest first. Both the server and the client read
//! them from here.

/// The protocol versions of the modern era this crate speaks, newest
/// first.
pub const SUPPORTED_VERSIONS: &[&str] = &["2026-07-28"];

/// The legacy versions this crate speaks (the `initialize` handshake),
/// newest first.
pub const LEGACY_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

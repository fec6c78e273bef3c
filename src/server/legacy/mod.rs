//! Serving legacy clients: the `initialize` era (2025-11-25 and earlier)
//! on the same connection as modern requests (spec 2026-07-28
//! basic/versioning, "Backward Compatibility with Initialization-Based
//! Versions").
//!
//! The era of a request is decided by its own shape: a request whose
//! `_meta` carries `io.modelcontextprotocol/protocolVersion` is modern and
//! served statelessly; `initialize` without it opens a legacy session for
//! the connection, and later requests without it are served under that
//! session (its version, its capabilities, its log level, its resource
//! subscriptions). `ping` without modern `_meta` is answered at any time,
//! as 2025-11-25 allows before initialization.
//!
//! Legacy versions served: 2025-11-25, 2025-06-18, 2025-03-26 and
//! 2024-11-05. The same registered tools, resources, prompts and
//! completion serve them; results drop what only 2026-07-28 has
//! (`resultType`, `ttlMs`, `cacheScope`, `serverInfo` in `_meta`). Fields
//! newer than a client's version (`structuredContent`, `title`, `icons`,
//! resource links, ...) are optional extras that older clients ignore.

mod asks;
pub(crate) mod downgrade;
pub(crate) mod front;
mod input;
pub(crate) mod session;
mod wrap;

pub(crate) use front::Front;

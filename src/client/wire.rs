//! Watching the wire: [`ClientBuilder::wire`](crate::ClientBuilder::wire)
//! hands every line the client writes to the server, and every line it
//! reads from it, to a hook, in the order they cross the pipes.
//!
//! For people who want to see the protocol (a `--wire` flag, a debugging
//! log, a test that records a transcript). The hook is called just before a
//! line is written (by the link's writer thread, or by a caller writing its
//! own line, under the input's lock: in the order of the bytes), and by its reader thread
//! just after a line is read, so a request always shows before its reply.
//! Unset, it costs one `Option` check per line. A panic in the hook is
//! caught and noted (`Notes::guard`): the line is still written or routed.

use std::sync::Arc;

/// Which way a line crossed the wire (see
/// [`ClientBuilder::wire`](crate::ClientBuilder::wire)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WireDirection {
    /// From the client to the server (the server's stdin).
    Sent,
    /// From the server to the client (the server's stdout).
    Received,
}

/// The hook: a direction and one line, without its newline.
pub(crate) type WireFn = dyn Fn(WireDirection, &[u8]) + Send + Sync;

/// The hook of a connection, if any.
pub(crate) type Wire = Option<Arc<WireFn>>;

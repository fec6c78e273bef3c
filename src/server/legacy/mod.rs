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

pub(crate) mod downgrade;
mod input;
pub(crate) mod session;

use std::sync::Arc;

use crate::server::Inner;
use crate::server::work::{Then, Work};

pub(crate) use downgrade::for_legacy;
pub(crate) use input::Reprepare;
pub(crate) use session::{LegacyRequest, LegacySession, session_request};

/// Which round of a request is being prepared: only the first one of a
/// legacy request is wrapped (the wrapper runs the later ones itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Round {
    First,
    Retry,
}

/// How the work of a legacy request is wrapped: its reply drops what only
/// 2026-07-28 results carry, and one whose handler may ask for input asks
/// the client from the pool (it waits for the answers).
pub(crate) enum Wrap {
    Downgrade { method: String, version: String },
    Bridge(Box<input::Bridge>),
}

impl Wrap {
    /// The wrap of the first round of a legacy request of `method` with
    /// `params`; `None` for a later round. `reprepare` prepares the later
    /// rounds (the kernel's own preparation, handed down so that this
    /// module never calls up into it).
    pub fn new(
        inner: &Arc<Inner>,
        method: &str,
        params: &str,
        session: &Arc<LegacySession>,
        round: Round,
        reprepare: Reprepare,
    ) -> Option<Wrap> {
        if round == Round::Retry {
            return None;
        }
        Some(if input::may_ask(method) {
            Wrap::Bridge(Box::new(input::Bridge {
                inner: Arc::clone(inner),
                method: method.to_owned(),
                params: params.to_owned(),
                session: Arc::clone(session),
                reprepare,
            }))
        } else {
            Wrap::Downgrade {
                method: method.to_owned(),
                version: session.version.clone(),
            }
        })
    }

    /// Wraps `work`, which runs `inline` or not as it was registered. A
    /// request that asks the client waits for the answers, which only the
    /// reader can read: an inline one's first round runs on the reader,
    /// and what follows it (its [`Then`]) hands the rest to the pool when
    /// the handler needs input.
    pub fn apply(self, work: Work, inline: bool) -> (Work, bool, Option<Then>) {
        match self {
            Wrap::Bridge(bridge) if inline => (
                work,
                true,
                Some(Box::new(move |reply| bridge.after_inline(reply))),
            ),
            Wrap::Bridge(bridge) => (bridge.wrap(work), false, None),
            Wrap::Downgrade { method, version } => (
                Box::new(move |ctx| for_legacy(work(ctx), &method, &version)),
                inline,
                None,
            ),
        }
    }
}

//! How the work of a legacy request is wrapped (see `legacy::front`).

use std::sync::Arc;

use crate::server::Inner;
use crate::server::legacy::asks::Asks;
use crate::server::legacy::downgrade::for_legacy;
use crate::server::legacy::input::{Bridge, may_ask};
use crate::server::legacy::session::LegacySession;
use crate::server::work::Runnable;

/// How the work of a legacy request is wrapped: its reply drops what only
/// 2026-07-28 results carry, and one whose handler may ask for input asks
/// the client (it waits for the answers).
pub(crate) enum Wrap {
    Downgrade { method: String, version: String },
    Bridge(Box<Bridge>),
}

impl Wrap {
    /// The wrap of a legacy request of `method` with `params`, under
    /// `session`, on the connection whose asks are `asks`.
    pub fn new(
        inner: &Arc<Inner>,
        method: &str,
        params: &str,
        session: &Arc<LegacySession>,
        asks: &Arc<Asks>,
    ) -> Wrap {
        if may_ask(method) {
            Wrap::Bridge(Box::new(Bridge {
                inner: Arc::clone(inner),
                method: method.to_owned(),
                params: params.to_owned(),
                session: Arc::clone(session),
                asks: Arc::clone(asks),
            }))
        } else {
            Wrap::Downgrade {
                method: method.to_owned(),
                version: session.version.clone(),
            }
        }
    }

    /// Wraps `runnable`'s work. An inline request that may ask the client runs
    /// its first round on the reader, as a modern one does, and the rest,
    /// which waits for answers that only the reader can read, on the pool
    /// (`Bridge::wrap_inline`).
    pub fn apply(self, runnable: Runnable) -> Runnable {
        let Runnable {
            meta,
            work,
            inline,
            retry,
        } = runnable;
        let (work, inline) = match self {
            Wrap::Bridge(bridge) if inline => (bridge.wrap_inline(work), true),
            Wrap::Bridge(bridge) => (bridge.wrap(work), false),
            Wrap::Downgrade { method, version } => (
                Box::new(move |ctx: &_| for_legacy(work(ctx), &method, &version)) as _,
                inline,
            ),
        };
        Runnable {
            meta,
            work,
            inline,
            retry,
        }
    }
}

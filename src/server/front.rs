//! Which front end a connection's input goes through before the core:
//! the legacy era's (`legacy::Front`) when the server serves legacy
//! clients, none otherwise. The one place that chooses, so that the core
//! (`reader`, `serve`) never names an era.

use std::sync::Arc;

use crate::server::Inner;
use crate::server::conn::handle::ConnHandle;
use crate::server::reader::FrontEnd;

/// The front end of `conn`, if the server serves another era than the
/// core's (see [`Inner::serves_legacy`]). Made before the connection is
/// registered with the server's connections: the session the front end
/// may open hears what is published before the connection's own
/// subscriptions do, as in one connection.
pub(crate) fn front_end(inner: &Arc<Inner>, conn: &ConnHandle) -> Option<Box<dyn FrontEnd>> {
    #[cfg(feature = "legacy")]
    if inner.serves_legacy() {
        let front = crate::server::legacy::Front::new(inner, conn);
        front.hear();
        return Some(Box::new(front));
    }
    let _ = (inner, conn);
    None
}

//! The connections a listener has open: the cap on how many, and their end
//! when the server stops. A connection between requests (idle, waiting up
//! to the idle timeout for the next one) is closed at once; one serving a
//! request ends once its response is complete (the request has the
//! server's grace period); `serve_http` returns when all have ended.
//!
//! At the cap a connection that waits for a request gives way to the new
//! one (its socket is shut down): the one that has waited longest, be it
//! silent since it opened or idle between requests, else the oldest legacy
//! GET stream (its client may open it again). Connections that send
//! nothing, or never close a session's stream, would otherwise fill the
//! cap and every later connection be refused. A new connection waits
//! nowhere until its thread has looked at it and found nothing
//! (`OpenConnections::idle`): a client that sent its request at once is
//! never the one to give way.

use std::collections::HashMap;
use std::net::{Shutdown, TcpStream};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

/// The open connections, by key.
#[derive(Default)]
pub(crate) struct OpenConnections {
    state: Mutex<State>,
    /// Signalled when a connection ends.
    ended: Condvar,
}

#[derive(Default)]
struct State {
    /// Each connection, by key: older connections have smaller keys.
    sockets: HashMap<u64, Open>,
    next_key: u64,
    closing: bool,
}

/// One open connection.
struct Open {
    /// To close it when idle at the end, or when it gives way.
    socket: TcpStream,
    /// It is serving a request.
    busy: bool,
    /// Since when it has waited for a request, found silent by its thread
    /// (it may give way); `None` while it serves one, and until its
    /// thread first looked.
    idle_since: Option<Instant>,
    /// It serves a legacy session's GET stream (it may give way).
    stream: bool,
}

impl OpenConnections {
    /// Counts a new connection in, unless the listener is closing or `max`
    /// are open and none gives way (see the module docs); returns its key.
    pub fn enter(&self, socket: &TcpStream, max: usize) -> Option<u64> {
        let mut state = self.lock();
        if state.closing {
            return None;
        }
        if state.sockets.len() >= max {
            let idle = (state.sockets.iter())
                .filter_map(|(key, open)| Some((open.idle_since?, *key)))
                .min()
                .map(|(_, key)| key);
            let stream = || {
                (state.sockets.iter())
                    .filter(|(_, open)| open.stream)
                    .map(|(key, _)| *key)
                    .min()
            };
            let gives_way = idle.or_else(stream)?;
            // Its thread sees the end at its next read, or is told by
            // `serving`, and leaves.
            let gone = state.sockets.remove(&gives_way).expect("just found");
            let _ = gone.socket.shutdown(Shutdown::Both);
        }
        let socket = socket.try_clone().ok()?;
        let key = state.next_key;
        state.next_key += 1;
        let open = Open {
            socket,
            busy: false,
            idle_since: None,
            stream: false,
        };
        state.sockets.insert(key, open);
        Some(key)
    }

    /// The connection `key` begins (`true`) or ends (`false`) serving a
    /// request. Returns whether it may go on: `false` once it gave way to
    /// another, or the listener is closing and it is between requests.
    pub fn serving(&self, key: u64, serving: bool) -> bool {
        let mut state = self.lock();
        let Some(open) = state.sockets.get_mut(&key) else {
            return false;
        };
        open.busy = serving;
        open.idle_since = None;
        serving || !state.closing
    }

    /// The connection `key` waits for a request and its thread found it
    /// silent (`connection::request_begins`): at the cap it may give way.
    pub fn idle(&self, key: u64) {
        if let Some(open) = self.lock().sockets.get_mut(&key) {
            open.idle_since = Some(Instant::now());
        }
    }

    /// The connection `key` serves a legacy session's GET stream from here
    /// on (`true`: at the cap it gives way to a new connection, see the
    /// module docs), or no more.
    #[cfg(feature = "legacy")]
    pub fn streaming(&self, key: u64, stream: bool) {
        if let Some(open) = self.lock().sockets.get_mut(&key) {
            open.stream = stream;
        }
    }

    /// The connection `key` ended.
    pub fn leave(&self, key: u64) {
        self.lock().sockets.remove(&key);
        self.ended.notify_all();
    }

    /// The end: no new connection is counted in, the idle ones are closed
    /// (their threads see the end of input), and this waits until every
    /// connection ended or `deadline` passed (`None`: as long as it takes).
    pub fn close(&self, deadline: Option<Instant>) {
        let mut state = self.lock();
        state.closing = true;
        for open in state.sockets.values() {
            if !open.busy {
                let _ = open.socket.shutdown(Shutdown::Both);
            }
        }
        while !state.sockets.is_empty() {
            let now = Instant::now();
            state = match deadline {
                Some(at) if now >= at => return,
                Some(at) => {
                    let waited = self.ended.wait_timeout(state, at - now);
                    waited.map_or_else(|e| e.into_inner().0, |(state, _)| state)
                }
                None => self
                    .ended
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner),
            };
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

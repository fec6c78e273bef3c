//! The connections a listener has open: the cap on how many, and their end
//! when the server stops. A connection between requests (idle, waiting up
//! to the idle timeout for the next one) is closed at once; one serving a
//! request ends once its response is complete (the request has the
//! server's grace period); `serve_http` returns when all have ended.

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
    /// Each connection's socket (to close it when idle at the end), and
    /// whether it is serving a request.
    sockets: HashMap<u64, (TcpStream, bool)>,
    next_key: u64,
    closing: bool,
}

impl OpenConnections {
    /// Counts a new connection in, unless `max` are open or the listener is
    /// closing; returns its key.
    pub fn enter(&self, socket: &TcpStream, max: usize) -> Option<u64> {
        let mut state = self.lock();
        if state.closing || state.sockets.len() >= max {
            return None;
        }
        let socket = socket.try_clone().ok()?;
        let key = state.next_key;
        state.next_key += 1;
        state.sockets.insert(key, (socket, false));
        Some(key)
    }

    /// The connection `key` begins (`true`) or ends (`false`) serving a
    /// request. Returns whether it may go on: `false` once the listener is
    /// closing and the connection is between requests.
    pub fn serving(&self, key: u64, serving: bool) -> bool {
        let mut state = self.lock();
        if let Some((_, busy)) = state.sockets.get_mut(&key) {
            *busy = serving;
        }
        serving || !state.closing
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
        for (socket, busy) in state.sockets.values() {
            if !busy {
                let _ = socket.shutdown(Shutdown::Both);
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

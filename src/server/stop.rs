//! Stopping a server: [`StopHandle`], and the work the stop runs for the
//! crate's own code (`AtStop`, kept through `Server::at_stop`: a proxy's
//! `tasks/cancel` of each task it follows behind).

#[cfg(feature = "client")]
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
#[cfg(feature = "client")]
use std::sync::Mutex;
#[cfg(feature = "client")]
use std::sync::atomic::{AtomicU64, Ordering};

use super::connections::Connections;

/// Work the stop runs, by key (`Server::at_stop`): for a proxy, the
/// `tasks/cancel` of each task it follows behind (`proxy::follow_task`).
/// Only the proxy uses it, so only a build with the client has it.
#[cfg(feature = "client")]
#[derive(Default)]
pub(crate) struct AtStop {
    work: Mutex<HashMap<u64, Box<dyn FnOnce() + Send>>>,
    next_key: AtomicU64,
}

#[cfg(feature = "client")]
impl AtStop {
    /// Keeps `work` for the stop of `connections`, or runs it at once if
    /// they were stopped; the key that takes it back ([`AtStop::forget`]).
    pub fn keep(&self, connections: &Connections, work: impl FnOnce() + Send + 'static) -> u64 {
        let key = self.next_key.fetch_add(1, Ordering::Relaxed);
        let mut waiting = crate::sync::lock(&self.work);
        // Read under the lock the stop takes the work under, once it set
        // the flag: a stop that took the work already is seen here.
        if connections.is_stopped() {
            drop(waiting);
            work();
        } else {
            waiting.insert(key, Box::new(work));
        }
        key
    }

    /// Takes back the work kept under `key`; whether it was still there
    /// (the stop had not run it).
    pub fn forget(&self, key: u64) -> bool {
        (crate::sync::lock(&self.work).remove(&key)).is_some()
    }

    /// Runs every work kept, once the connections were told to stop: taken
    /// out under the lock [`AtStop::keep`] reads the stop under, so each
    /// runs once, here or there.
    fn run(&self) {
        let work = std::mem::take(&mut *crate::sync::lock(&self.work));
        for (_, work) in work {
            work();
        }
    }
}

/// Stops a server from any thread; see
/// [`Server::stop_handle`](crate::Server::stop_handle).
#[derive(Clone)]
pub struct StopHandle {
    connections: Arc<Connections>,
    #[cfg(feature = "client")]
    at_stop: Arc<AtStop>,
}

impl fmt::Debug for StopHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StopHandle").finish_non_exhaustive()
    }
}

impl StopHandle {
    /// The stop of the server that serves `connections` (and keeps
    /// `at_stop`'s work).
    pub(super) fn new(
        connections: Arc<Connections>,
        #[cfg(feature = "client")] at_stop: Arc<AtStop>,
    ) -> StopHandle {
        StopHandle {
            connections,
            #[cfg(feature = "client")]
            at_stop,
        }
    }

    /// Shuts the server down the way end of input does: no new work,
    /// in-flight handlers get the grace period, then they are cancelled,
    /// the output is flushed and [`Server::serve`](crate::Server::serve)
    /// returns. Stopping is final: a later `serve` on the same server
    /// returns at once. It never blocks on a client: each connection's
    /// shutdown sends what is left. A proxy's stop also sends
    /// `tasks/cancel` for each task it follows behind, without waiting for
    /// an answer (`proxy::serve_as`).
    pub fn stop(&self) {
        self.connections.stop();
        // Every connection told; then the work kept for the stop.
        #[cfg(feature = "client")]
        self.at_stop.run();
    }
}

#[cfg(test)]
#[cfg(feature = "client")]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use crate::Server;

    fn counted(server: &Server, runs: &Arc<AtomicUsize>) -> u64 {
        let runs = Arc::clone(runs);
        server.at_stop(move || {
            runs.fetch_add(1, Ordering::SeqCst);
        })
    }

    /// Claim (review-proxy12): work kept for the stop runs once whoever
    /// stops, however often, from however many threads; work kept after
    /// the stop runs at once; and whoever takes work out first (the stop,
    /// or `forget_at_stop`) is the only one that has it. Found false.
    #[test]
    fn work_kept_for_the_stop_runs_once_whoever_stops_and_however_often() {
        let server = Server::builder("t", "1").build();
        let runs = Arc::new(AtomicUsize::new(0));
        let kept = counted(&server, &runs);
        let forgotten = counted(&server, &runs);
        assert!(server.forget_at_stop(forgotten));
        let stops: Vec<_> = (0..4)
            .map(|_| {
                let stop = server.stop_handle();
                std::thread::spawn(move || stop.stop())
            })
            .collect();
        for stop in stops {
            stop.join().unwrap();
        }
        server.stop_handle().stop();
        assert_eq!(runs.load(Ordering::SeqCst), 1, "the kept work ran not once");
        assert!(
            !server.forget_at_stop(kept),
            "the stop left the work behind"
        );
        let after = counted(&server, &runs);
        assert_eq!(
            runs.load(Ordering::SeqCst),
            2,
            "work kept after the stop did not run"
        );
        assert!(!server.forget_at_stop(after));
        server.stop_handle().stop();
        assert_eq!(runs.load(Ordering::SeqCst), 2);
    }
}

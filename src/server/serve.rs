//! [`Server::serve`]: one connection, from its first line to its end.
//!
//! ```text
//! input ──► mcp-reader: read, classify, dispatch in order ──► conn (one lock) ──► output
//!              │ inline handlers run here, without the lock          ▲
//!              └─ pooled jobs ──► mcp-worker ── Conn::finish ─────────┤
//!                          Notifier (any thread) ── Conn::publish ───┘
//! serve() caller: waits for the end (EOF, stop, a failed write), then shuts down
//! ```
//!
//! The thread that calls `serve` does not read or write: it waits for the
//! end, then gives the requests in flight the grace period, answers what is
//! left with `-32603` and closes the output (`ConnHandle::shut_down`). It never
//! waits for a reader blocked on its input: after a stop, `serve` returns
//! while the reader may still wait for a line it will not act on. Nor for
//! a client that does not read: the shutdown's sends go to the pool, and
//! a client that stops taking the last of the output is given up on
//! (`wind_down`).

use std::io::ErrorKind::{BrokenPipe, ConnectionReset};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};

use crate::error::Error;
use crate::server::conn::handle::{ConnHandle, Sending};
use crate::server::conn::{End, Writer};
use crate::server::{Inner, Server, front, heap, reader};
use crate::transport::Transport;

impl Server {
    /// Serves one connection: blocks until its input ends or
    /// [`StopHandle::stop`](crate::StopHandle::stop) is called, then shuts down (see
    /// [`ServerBuilder::shutdown_grace`](crate::ServerBuilder::shutdown_grace)) and returns.
    ///
    /// A thread of its own (`mcp-reader`) reads the input and runs inline
    /// handlers; pooled handlers run on the server's worker threads.
    /// Several connections may be served at once from different threads.
    ///
    /// Returns an error only when the output failed, a thread could not
    /// be started, or the client kept its end of the output open and took
    /// less than 16 KiB of it in the write timeout
    /// ([`ServerBuilder::write_timeout`](crate::ServerBuilder::write_timeout),
    /// 10 s) while a send waited on it, or while the last replies waited
    /// after the grace period (`TimedOut`: a `write(2)` of the server's may
    /// then stay blocked on a thread until the client reads or goes; a
    /// client that stopped reading would hold every publisher of the
    /// server). A client that closes its end of the output (a
    /// broken pipe, a reset socket) ends serving as end of input does, with
    /// `Ok`: which of the two the server notices first is a race.
    ///
    /// A client that takes less than 16 KiB of a send in progress in the
    /// write timeout is taken to be gone whatever else happens (a publisher
    /// waits or not, the input is open or not), and `serve` returns
    /// `TimedOut`: a client that closes the server's input while it reads
    /// none of a full output (more than a pipe holds) keeps the reader in
    /// a `write(2)`, where it cannot read the end of input. That
    /// `write(2)` and the reader's thread may then stay blocked until the
    /// client reads or goes.
    pub fn serve(&self, transport: Transport) -> Result<(), Error> {
        match serve(&self.inner, transport) {
            Err(Error::Io(e)) if matches!(e.kind(), BrokenPipe | ConnectionReset) => Ok(()),
            done => done,
        }
    }
}

/// Serves one connection until its input ends, a stop, or a failed write.
fn serve(inner: &Arc<Inner>, transport: Transport) -> Result<(), Error> {
    let (input, output) = transport.into_parts();
    let (end_tx, end) = crossbeam_channel::unbounded();
    let conn = ConnHandle::new(inner, Writer::Bytes(output), end_tx);
    let mut front = front::front_end(inner, &conn);
    let key = inner.connections.connect(conn.as_connection());
    // The front end goes to the reader once it runs; until then it is
    // this thread's to end.
    let (give, take) = crossbeam_channel::bounded(1);
    let started = {
        let inner = Arc::clone(inner);
        let conn = conn.clone();
        thread::Builder::new()
            .name("mcp-reader".into())
            .spawn(move || reader::read_loop(&inner, &conn, input, take.recv().ok().flatten()))
    };
    let why = match started {
        Ok(_) => {
            let _ = give.send(front.take());
            wait_for_end(inner, &conn, &end)
        }
        Err(e) => {
            if let Some(front) = &mut front {
                front.end();
            }
            inner.connections.disconnect(key);
            return Err(Error::Io(e));
        }
    };
    let done = wind_down(inner, &conn, why);
    inner.connections.disconnect(key);
    done
}

/// Waits for the end of serving. Meanwhile it lets a client go that is too
/// slow to keep (`ConnHandle::let_go_if_stalled`: it took less than 16 KiB
/// of a send in progress in the write timeout; looked at as its time comes,
/// else every write timeout): nobody else may be waiting on that client,
/// and a reader held in its own `write(2)` to it never reads the end of
/// input. And when asked, it gives memory back after each idle spell.
fn wait_for_end(inner: &Inner, conn: &ConnHandle, end: &Receiver<End>) -> End {
    let mut spells = inner.config.release_memory.then(heap::Spells::new);
    loop {
        let Some(left) = conn.let_go_if_stalled() else {
            return End::OutputFailed;
        };
        // No sooner than `LOOK_AT_MOST_EVERY`: a write timeout of a
        // millisecond must not wake this thread a thousand times a second
        // while nothing is sent (a publisher waiting on the client still
        // looks in time).
        let left = left.max(LOOK_AT_MOST_EVERY);
        let wait = spells.as_ref().map_or(left, |s| left.min(s.until_next()));
        match end.recv_timeout(wait) {
            Ok(why) => return why,
            Err(RecvTimeoutError::Disconnected) => return End::Eof,
            Err(RecvTimeoutError::Timeout) => {}
        }
        if let Some(spells) = &mut spells {
            spells.look(|| conn.look(|c| c.lines));
        }
    }
}

/// How often, at most, `serve`'s thread looks at the client's clock
/// while it waits for the end ([`wait_for_end`]): a client too slow to
/// keep is let go at most this late.
const LOOK_AT_MOST_EVERY: Duration = Duration::from_millis(20);

/// The shutdown: no new request begins and every subscription gets its
/// final result; the requests in flight have the grace period (none after
/// a failed write); then what is left is answered with `-32603`, and the
/// client has the write timeout to take 16 KiB of it, each time it took
/// that much (the one rule for a client too slow to keep,
/// `Shared::let_go_if_stalled`). Neither wait writes on this thread
/// (`ConnHandle::wait_until` with a deadline, `ConnHandle::shut_down`
/// watching the client): a client that keeps its end open and reads
/// nothing does not hold `serve` (unless the write timeout is too long for
/// the clock: `Duration::MAX` never gives a client up). The grace period
/// asks the rule too: a handler held in a `write(2)` to such a client
/// never settles. (A grace period and a write timeout both too long for
/// the clock have no deadline: then this thread waits, and sends, as long
/// as it takes.)
fn wind_down(inner: &Inner, conn: &ConnHandle, why: End) -> Result<(), Error> {
    let grace = inner.config.shutdown_grace;
    if why != End::OutputFailed {
        conn.act(Sending::AtShutdown, |c| c.begin_shutdown());
        // A grace period too long for the clock waits as long as it takes.
        let deadline = Instant::now().checked_add(grace);
        // The rule for a client too slow to keep holds meanwhile: a request
        // whose handler is held in a `write(2)` to a client that stopped
        // reading never settles, and the grace period would pass before
        // the write timeout counted (`Shared::let_go_if_stalled`).
        while let Some(left) = conn.let_go_if_stalled() {
            let look = Instant::now().checked_add(left.max(LOOK_AT_MOST_EVERY));
            let until = [deadline, look].into_iter().flatten().min();
            if conn.wait_until(until, |c| c.settled())
                || deadline.is_some_and(|at| Instant::now() >= at)
            {
                break;
            }
        }
    }
    conn.shut_down(true)
}

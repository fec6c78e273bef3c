//! The reader thread: the only code that reads a connection's input, and
//! its dispatcher. It reads one line at a time (never more than the
//! maximum line length in memory), classifies it, and acts on it before it
//! reads the next: so lines take effect in the order they were read, with
//! nothing else to keep that order.
//!
//! A request is prepared (see `dispatch`: outside the lock, it only reads
//! the registry) and begun (`ConnHandle::begin`: refused, answered, or
//! entered in the in-flight map). An inline handler then runs right here,
//! without the connection's lock, and its reply goes out through
//! `Conn::finish`; a pooled one is already on the pool. While the queue
//! for slots is full the reader waits before it reads on: that is the
//! backpressure, and a client's cancellations behind the queued lines
//! wait with them.
//!
//! While the reader has complete lines in hand, what is written (by it or
//! by a worker) is flushed when it runs out of them: one `write(2)` for a
//! pipelined burst, none kept waiting when the client waits.

use std::io::{BufRead, BufReader};
use std::sync::Arc;

use crate::incoming::{Incoming, Params, cancelled_id, classify};
use crate::jsonrpc::RequestId;
use crate::server::Inner;
use crate::server::conn::End;
use crate::server::conn::handle::ConnHandle;
use crate::server::dispatch::prepare;
use crate::transport::{Line, give_back_large, read_line, reuse_or_shrink, too_long_error};
use crate::types::method;

/// The input buffer: large enough that a burst of small lines is one read.
const INPUT_BUFFER: usize = 64 * 1024;

/// Reads and dispatches `input` until it ends or the connection closes;
/// then announces the end.
pub(crate) fn read_loop(inner: &Arc<Inner>, conn: &ConnHandle, input: Box<dyn BufRead + Send>) {
    let max_line = inner.config.max_line_bytes;
    let mut input = BufReader::with_capacity(INPUT_BUFFER, input);
    let mut buf = Vec::new();
    // Whether the reader dispatched lines since it last ran dry.
    let mut dispatched = false;
    loop {
        // With lines in hand, what any thread writes waits for the reader
        // to run out of them; then it goes out in one `write(2)`, and a
        // large line buffer goes back.
        if memchr::memchr(b'\n', input.buffer()).is_none() {
            conn.ran_dry(std::mem::take(&mut dispatched));
            give_back_large(&mut buf);
        }
        let incoming = match read_line(&mut input, &mut buf, max_line) {
            Ok(Line::Message) => classify(&buf),
            Ok(Line::TooLong { len, envelope }) => {
                match Incoming::too_long(envelope, too_long_error(len, max_line)) {
                    Some(incoming) => incoming,
                    None => {
                        inner.trace(&format!(
                            "dropped a notification of {len} bytes: longer than the maximum line length of {max_line} bytes"
                        ));
                        continue;
                    }
                }
            }
            Ok(Line::Eof) => return conn.end(End::Eof),
            Err(e) => {
                inner.trace(&format!("reading input failed: {e}"));
                return conn.end(End::Eof);
            }
        };
        if conn.is_closed() {
            return;
        }
        dispatch(inner, conn, incoming, buf.len());
        dispatched = true;
        reuse_or_shrink(&mut buf);
    }
}

/// Acts on one message of `bytes` bytes: the whole of the server's
/// reaction to it is done, or begun, when this returns.
pub(crate) fn dispatch(
    inner: &Arc<Inner>,
    conn: &ConnHandle,
    incoming: Incoming<'_>,
    bytes: usize,
) {
    match incoming {
        Incoming::Request { id, method, params } => {
            request(inner, conn, id, &method, params, bytes);
        }
        Incoming::Notification { method, params } => {
            if method == method::NOTIFICATION_CANCELLED {
                if let Some(id) = cancelled_id(params.as_ref()) {
                    conn.lock_for_reader().cancel(&id);
                }
            } else if method == "notifications/initialized" {
                #[cfg(feature = "legacy")]
                conn.lock_for_reader().mark_initialized();
            }
            // Spec 2026-07-28 basic/index: notifications are never
            // answered; unknown ones are ignored.
        }
        Incoming::Response { id, reply } => {
            #[cfg(feature = "legacy")]
            if conn.lock_for_reader().answer(id.as_ref(), reply) {
                return;
            }
            #[cfg(not(feature = "legacy"))]
            drop(reply);
            let id = id.map_or_else(|| "null".to_owned(), |id| id.to_string());
            inner.trace(&format!(
                "ignoring a response (id {id}) from the client: it answers no request of this server"
            ));
        }
        Incoming::Invalid { id, error } => conn.lock_for_reader().write_error(id.as_ref(), &error),
    }
}

/// A request: prepared (outside the lock: it only reads the registry) and
/// begun. An inline one runs here.
fn request(
    inner: &Arc<Inner>,
    conn: &ConnHandle,
    id: RequestId,
    method: &str,
    params: Option<Params<'_>>,
    bytes: usize,
) {
    #[cfg(feature = "legacy")]
    let prepared = {
        let session = conn.lock_for_reader().session();
        prepare(inner, method, params, session.as_ref())
    };
    #[cfg(not(feature = "legacy"))]
    let prepared = prepare(inner, method, params);
    if let Some(job) = conn.begin(id, prepared, bytes) {
        conn.run_inline(job);
    }
}

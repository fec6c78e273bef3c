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
//! What the reader writes (replies of inline handlers, errors,
//! acknowledgments) it holds back while it has lines in hand, so that a
//! pipelined burst is answered in one `write(2)`; and the one way it reads
//! its input, [`SendFirst`], sends that first. So nothing the server
//! decided waits behind a blocking read, whatever the input holds (blank
//! lines, a partial line, a line split across writes).

use std::io::{self, BufRead, BufReader, Read};
use std::sync::Arc;

use crate::incoming::{Incoming, cancelled_id, classify};
use crate::server::Inner;
use crate::server::conn::End;
use crate::server::conn::handle::{ConnHandle, Sending};
use crate::server::dispatch::prepare;
use crate::transport::{Line, give_back_large, read_line, reuse_or_shrink, too_long_error};
use crate::types::method;

/// The input buffer: large enough that a burst of small lines is one read.
const INPUT_BUFFER: usize = 64 * 1024;

/// A front end: what stands between the input and the core for the
/// messages of another era (the legacy era's `legacy::Front`). It acts on
/// the messages that are its own, through the same connection's methods,
/// and hands the others back for the core.
pub(crate) trait FrontEnd: Send {
    /// Acts on `incoming` (a line of `bytes` bytes) if it is its own;
    /// otherwise hands it back.
    fn take<'a>(&mut self, incoming: Incoming<'a>, bytes: usize) -> Option<Incoming<'a>>;
    /// Nothing more comes: the input ended, or the connection closed.
    fn end(&mut self);
}

/// Reads and dispatches `input` until it ends or the connection closes
/// (what `front` takes goes to it first); then announces the end.
pub(crate) fn read_loop(
    inner: &Arc<Inner>,
    conn: &ConnHandle,
    input: Box<dyn BufRead + Send>,
    mut front: Option<Box<dyn FrontEnd>>,
) {
    let max_line = inner.config.max_line_bytes;
    let mut input = BufReader::with_capacity(INPUT_BUFFER, SendFirst { input, conn });
    let mut buf = Vec::new();
    loop {
        // About to wait for input: a large line buffer goes back.
        if memchr::memchr(b'\n', input.buffer()).is_none() {
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
            Ok(Line::Eof) => break,
            Err(e) => {
                inner.trace(&format!("reading input failed: {e}"));
                break;
            }
        };
        if conn.is_closed() {
            break;
        }
        let bytes = buf.len();
        let incoming = match &mut front {
            Some(front) => front.take(incoming, bytes),
            None => Some(incoming),
        };
        if let Some(incoming) = incoming {
            dispatch(inner, conn, incoming, bytes);
        }
        reuse_or_shrink(&mut buf);
    }
    if let Some(front) = &mut front {
        front.end();
    }
    if !conn.is_closed() {
        conn.end(End::Eof);
    }
}

/// The reader's input: every read of it is preceded by the send of what
/// waits to be sent ([`ConnHandle::send_deferred`]). The reader defers the
/// send of what it writes while it has lines in hand (`Sending::BeforeRead`), and
/// `read_loop` reads only through this, after its buffer of lines ran out:
/// so a read that blocks never keeps back a reply, an error or an
/// acknowledgment, whatever came before it on the input.
struct SendFirst<'a> {
    input: Box<dyn BufRead + Send>,
    conn: &'a ConnHandle,
}

impl Read for SendFirst<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.conn.send_deferred();
        self.input.read(buf)
    }
}

/// Acts on one message of `bytes` bytes: the whole of the server's
/// reaction to it is done, or begun, when this returns. What it writes is
/// sent when the caller reads or waits (`Sending::BeforeRead`); a
/// caller that reads no next line sends it ([`ConnHandle::send_deferred`]).
pub(crate) fn dispatch(
    inner: &Arc<Inner>,
    conn: &ConnHandle,
    incoming: Incoming<'_>,
    bytes: usize,
) {
    match incoming {
        // Prepared outside the lock (it only reads the registry), then
        // begun; an inline one runs here.
        Incoming::Request { id, method, params } => {
            let prepared = prepare(inner, &method, params, None);
            if let Some(inline) = conn.begin(id, prepared, bytes) {
                conn.run_inline(inline);
            }
        }
        Incoming::Notification { method, params } => {
            if method == method::NOTIFICATION_CANCELLED
                && let Some(id) = cancelled_id(params.as_ref())
            {
                conn.act(Sending::BeforeRead, |c| c.cancel(&id));
            }
            // Spec 2026-07-28 basic/index: notifications are never
            // answered; unknown ones are ignored.
        }
        Incoming::Response { id, reply } => {
            drop(reply);
            let id = id.map_or_else(|| "null".to_owned(), |id| id.to_string());
            inner.trace(&format!(
                "ignoring a response (id {id}) from the client: it answers no request of this server"
            ));
        }
        Incoming::Invalid { id, error } => {
            conn.act(Sending::BeforeRead, |c| c.write_error(id.as_ref(), &error));
        }
    }
}

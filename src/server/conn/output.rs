//! A connection's output: whole lines collected in a buffer, part of the
//! connection state (`Conn`) under its lock, so lines are written in the
//! order of the changes that wrote them; and sent without the lock.
//!
//! Spec 2026-07-28 basic/transports/stdio: messages are delimited by
//! newlines and stdout carries nothing but MCP messages.
//! [`Output::write_line`] is the only code that adds to a connection's
//! output: one message, then its newline, and nothing at all after the
//! first failed send.
//!
//! Writing only appends to the buffer (a line already encoded and as
//! large as the buffer is moved in whole, never copied); nothing is sent
//! under the lock. A send takes the buffer and the writer out
//! ([`Output::detach`]), one thread at a time, and writes them without
//! the lock (`handle`); meanwhile the others write into a buffer of their
//! own, which the next send takes. So a `write(2)` never holds the lock,
//! the lines still leave in their order, and only whole lines reach the
//! writer. Lines are counted as they are written and as sends take them
//! ([`Output::taken`]): a writer knows when its own are on their way.
//!
//! The writer is a byte stream ([`Writer::Bytes`], stdio: many lines in
//! one `write(2)`), or a writer of lines ([`Writer::Lines`], a Streamable
//! HTTP response body) that is told what each line is ([`LineKind`], from
//! the method that wrote it): whether it is a response, with its error
//! code. It decides its status and its end by them, without reading the
//! line again.

use std::io::{self, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::server::out::Out;

/// What a line written to a connection is, for a writer that is told
/// ([`Writer::Lines`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LineKind {
    /// A response: to a request, or a listen's final result; an error
    /// carries its code.
    Response { error: Option<i32> },
    /// Anything else the server sends for a request: a notification, or
    /// (a legacy front end's) a request to the client.
    Message,
    /// A published event a subscription asked for (a resource update, a
    /// list change): a writer may let a client go that does not keep up
    /// with them, rather than hold up the publisher (`server::http::body`).
    Event,
}

/// Where a connection's lines go.
pub(crate) enum Writer {
    /// A byte stream: lines go out together, many in one `write(2)`.
    Bytes(Box<dyn Write + Send>),
    /// A writer given one line at a time, with what it is.
    #[cfg_attr(
        not(feature = "http"),
        allow(dead_code, reason = "only a Streamable HTTP response body is one")
    )]
    Lines(Box<dyn LineWriter>),
}

/// A writer of whole lines ([`Writer::Lines`]).
pub(crate) trait LineWriter: Send {
    /// Writes one message (without its newline), which is `kind`.
    fn line(&mut self, kind: LineKind, line: &[u8]) -> io::Result<()>;

    /// A wait for room in what the client has not taken yet, for a thread
    /// that writes a request's own lines one after another (its progress,
    /// its logs) to call once its line was sent, outside the send (see
    /// `ConnHandle`'s `Outlet::notify`): the backpressure of a writer that
    /// does not wait in [`LineWriter::line`]. `None`: `line` waits itself.
    fn room(&self) -> Option<Room> {
        None
    }
}

/// See [`LineWriter::room`].
pub(crate) type Room = Box<dyn Fn() + Send + Sync>;

/// The size a buffer starts at, and the most the reader holds back before
/// it sends (`handle::Sending::BeforeRead`).
pub(super) const BUFFER: usize = 8 * 1024;

/// The most that may wait behind a send in progress before the reader
/// reads no further (`Conn::backed_up`).
pub(super) const BACKLOG: usize = 1024 * 1024;

/// One connection's output.
pub(super) struct Output {
    /// Large lines, each in a buffer of its own, and the buffers of small
    /// lines before them: sent before `lines`.
    queued: Vec<Vec<u8>>,
    /// Small lines written after those, and not yet taken out to be sent.
    lines: Out,
    /// The bytes in `queued` and `lines`.
    waiting: usize,
    /// Of `waiting`, the bytes of events that were held back for a client
    /// that is behind and written since ([`Output::push_released`]).
    released: usize,
    /// The kind and length (newline included) of each line in `queued`
    /// and `lines`, in order: only for a writer of lines (`None` for a
    /// byte stream, which is not told).
    kinds: Option<Vec<(LineKind, usize)>>,
    /// Lines written so far, and how many of them sends took (or a
    /// failure or the close dropped): a writer's lines are on their way
    /// once `taken` reaches the count its write left.
    written: u64,
    taken: u64,
    /// The writer; `None` while a thread sends with it, and once closed.
    writer: Option<Writer>,
    /// The buffer that takes the place of the one a send takes out.
    spare: Out,
    /// The first failed send; after it nothing more is written.
    error: Option<io::Error>,
    /// Closed: nothing more is written.
    closed: bool,
    /// When the client last took a piece of the output, counted by the
    /// send in progress as each `write(2)` returns ([`Output::idle`]).
    sent: Arc<Took>,
}

/// The client's clock: when a send began or the client last took a
/// piece's worth ([`WRITE_AT_MOST`]) of one ([`Output::idle`]). Only the
/// thread that holds the writer moves it: the send in progress, or
/// `Output::detach` as a send begins.
#[derive(Debug)]
struct Took {
    /// What the client took since the clock last moved.
    piece: AtomicU64,
    /// Nanoseconds from `epoch` to the last time the clock moved.
    at: AtomicU64,
    epoch: Instant,
}

impl Default for Took {
    fn default() -> Took {
        Took {
            piece: AtomicU64::new(0),
            at: AtomicU64::new(0),
            epoch: Instant::now(),
        }
    }
}

impl Took {
    /// A send began: the client's clock starts again.
    fn began(&self) {
        self.piece.store(0, Ordering::Relaxed);
        self.tick();
    }

    /// The client took `n` more bytes: the clock moves once it has taken
    /// a piece's worth since it last moved. A client that takes a page
    /// every few seconds does not move it each time: it is let go, where
    /// it held every publisher of the server at its pace
    /// (`send_path::a_client_that_reads_a_page_every_few_seconds_holds_up_no_other_connections_events`).
    fn add(&self, n: u64) {
        let piece = self.piece.fetch_add(n, Ordering::Relaxed) + n;
        if piece >= WRITE_AT_MOST as u64 {
            self.piece.store(0, Ordering::Relaxed);
            self.tick();
        }
    }

    fn tick(&self) {
        let now = u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.at.fetch_max(now, Ordering::Relaxed);
    }

    /// How long since the clock last moved.
    fn idle(&self) -> Duration {
        let at = Duration::from_nanos(self.at.load(Ordering::Relaxed));
        self.epoch.elapsed().saturating_sub(at)
    }
}

/// A writer and the lines it is to send, taken out of an [`Output`].
pub(super) struct Detached {
    writer: Writer,
    queued: Vec<Vec<u8>>,
    lines: Out,
    /// The lines' kinds, for a writer of lines.
    kinds: Vec<(LineKind, usize)>,
    /// See `Output::sent`.
    sent: Arc<Took>,
}

/// The most a send hands a byte stream in one `write(2)`. A blocking
/// `write(2)` to a pipe or a socket returns only once all of it was taken
/// (but for the pipe's or the socket's buffer), so the client's clock
/// ([`Output::idle`]) moves only as each returns: a send of a megabyte in
/// one `write(2)` to a client that read 32 KiB a second did not move it
/// for 30 s, and the client was let go while it read (`Conn::let_go`;
/// `slow_client::a_steady_slow_reader_on_a_pipe_is_not_let_go_while_events_are_published`).
/// In pieces of 16 KiB it moves for a client that takes 16 KiB in each
/// write timeout (`ServerBuilder::write_timeout`, the let-go's and the
/// shutdown's: 1.6 KiB a second at the default 10 s, 16 KiB a second at
/// 1 s; in pieces of 64 KiB a client reading 40 KiB a second was given up
/// on at a shutdown whose patience was 1 s:
/// `slow_client::a_steady_reader_on_a_pipe_gets_every_reply_with_a_short_write_timeout`),
/// at the cost of a `write(2)` per 16 KiB of a large send (a pipe holds 64
/// KiB: a burst of small replies is still one `write(2)`, and 1 MiB
/// replies cost nothing measurable in pieces of 64 KiB). On a Unix socket
/// (a socketpair: Node's `child_process`) a blocked `write(2)` returns only
/// once the client drained the socket to a quarter of `SO_SNDBUF`, about
/// 160 KiB, however small the piece: there the least rate kept is ten
/// times a pipe's, 16 KiB a second at the default
/// (`slow_client::a_steady_reader_on_a_unix_socket_gets_every_reply_with_the_default_write_timeout`).
/// It is the piece the let-go's clock counts too ([`Took::add`]): a
/// writer that returns after fewer bytes moves it once it took that many,
/// as a pipe would.
const WRITE_AT_MOST: usize = 16 * 1024;

/// A byte stream that counts what it took into `sent`, handed at most
/// [`WRITE_AT_MOST`] at a time.
struct Counting<'a> {
    writer: &'a mut (dyn Write + Send),
    sent: &'a Took,
}

impl Write for Counting<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let n = self
            .writer
            .write(&bytes[..bytes.len().min(WRITE_AT_MOST)])?;
        if n > 0 {
            self.sent.add(n as u64);
        }
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.writer.flush()
    }
}

impl Detached {
    /// Sends the lines and flushes the writer, counting the bytes the
    /// writer takes as it takes them (`Output::idle`).
    pub fn send(&mut self) -> io::Result<()> {
        let buffers = (self.queued.iter().map(Vec::as_slice)).chain([self.lines.as_slice()]);
        let sent = match &mut self.writer {
            Writer::Bytes(writer) => {
                let mut writer = Counting {
                    writer: &mut **writer,
                    sent: &self.sent,
                };
                buffers
                    .into_iter()
                    .try_for_each(|buffer| writer.write_all(buffer))
                    .and_then(|()| writer.flush())
            }
            Writer::Lines(writer) => {
                // Each buffer holds whole lines, in the order of `kinds`.
                let mut kinds = self.kinds.iter();
                buffers.into_iter().try_for_each(|mut buffer| {
                    while !buffer.is_empty() {
                        let Some(&(kind, len)) = kinds.next() else {
                            break;
                        };
                        let (line, rest) = buffer.split_at(len.min(buffer.len()));
                        writer.line(kind, line.strip_suffix(b"\n").unwrap_or(line))?;
                        self.sent.add(line.len() as u64);
                        buffer = rest;
                    }
                    Ok(())
                })
            }
        };
        self.queued.clear();
        self.lines.clear();
        self.kinds.clear();
        sent
    }
}

impl Output {
    pub fn new(writer: Writer) -> Output {
        let kinds = matches!(writer, Writer::Lines(_)).then(Vec::new);
        Output {
            queued: Vec::new(),
            lines: Out::with_capacity(BUFFER),
            waiting: 0,
            released: 0,
            kinds,
            written: 0,
            taken: 0,
            writer: Some(writer),
            spare: Out::with_capacity(BUFFER),
            error: None,
            closed: false,
            sent: Arc::default(),
        }
    }

    /// Writes one message with `body`, then its newline; it is `kind`.
    /// After a failed send, or once closed, nothing more is written; a
    /// message whose encoding fails is taken back whole.
    pub fn write_line(
        &mut self,
        kind: LineKind,
        body: impl FnOnce(&mut Out) -> serde_json::Result<()>,
    ) {
        if self.error.is_some() || self.closed {
            return;
        }
        let start = self.lines.len();
        match body(&mut self.lines) {
            Ok(()) => {
                self.lines.push(b"\n");
                let len = self.lines.len() - start;
                self.waiting += len;
                self.written += 1;
                if let Some(kinds) = &mut self.kinds {
                    kinds.push((kind, len));
                }
            }
            Err(_) => self.lines.truncate(start),
        }
    }

    /// Writes one message already encoded, then its newline; it is `kind`.
    /// A large one is moved in whole (a pooled reply of megabytes is not
    /// copied).
    pub fn push_line(&mut self, kind: LineKind, mut line: Vec<u8>) {
        // A message is never empty (see `Reply::into_line`).
        if line.is_empty() {
            return;
        }
        if line.len() < BUFFER {
            return self.write_line(kind, |out| {
                out.push(&line);
                Ok(())
            });
        }
        if self.error.is_some() || self.closed {
            return;
        }
        line.push(b'\n');
        self.waiting += line.len();
        self.written += 1;
        if let Some(kinds) = &mut self.kinds {
            kinds.push((kind, line.len()));
        }
        if !self.lines.is_empty() {
            let lines = std::mem::replace(&mut self.lines, Out::with_capacity(BUFFER));
            self.queued.push(lines.into_vec());
        }
        self.queued.push(line);
    }

    /// How many bytes wait to be sent (not counting a send in progress).
    pub fn waiting(&self) -> usize {
        self.waiting
    }

    /// Writes an event that was held back for a client that is behind
    /// (`Conn::write_held`), counted apart until a send takes it
    /// ([`Output::released`]).
    pub fn push_released(&mut self, line: Vec<u8>) {
        let before = self.waiting;
        self.push_line(LineKind::Event, line);
        self.released += self.waiting - before;
    }

    /// How many bytes of what waits are events held back and written
    /// since ([`Output::push_released`]).
    pub fn released(&self) -> usize {
        self.released
    }

    /// Whether the writer is a byte stream (stdio, a socket), where each
    /// send is a `write(2)` that wakes the client: worth gathering a
    /// burst's replies into one.
    pub fn is_stream(&self) -> bool {
        self.kinds.is_none()
    }

    /// Whether a thread is sending without the lock: it has the writer
    /// (a send given up on, [`Output::give_up`], is not counted: the
    /// output is closed).
    pub fn sending(&self) -> bool {
        self.writer.is_none() && !self.closed
    }

    /// How many lines were written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Whether the first `lines` lines written are on their way: taken by
    /// a send (in progress, or done), or dropped (a failed send, the
    /// close), so that nobody need send them any more.
    pub fn taken(&self, lines: u64) -> bool {
        self.taken >= lines
    }

    /// How long since a send began, or the client last took
    /// [`WRITE_AT_MOST`] of the output since the time before, which may be
    /// long before that send ends (megabytes to a client that reads 64 KiB
    /// at a time): what the rule for a client too slow to keep looks at
    /// (`Shared::let_go_if_stalled`), so that a client is let go when it
    /// takes less than that in the write timeout (1.6 KiB a second by
    /// default), at the end of serving too (`ConnHandle::shut_down`). The
    /// send does not wake anyone as the clock moves: look again later. One clock per
    /// connection, not one per wait: a
    /// publisher that comes to a client after another client's let-go
    /// does not wait for it all over again.
    pub fn idle(&self) -> Duration {
        self.sent.idle()
    }

    /// Takes out what is to be sent, and the writer, for the caller to
    /// send without the lock; `None` when nothing is, or another thread
    /// sends already (it sends this too, when it is back: see
    /// [`Output::attach`]).
    pub fn detach(&mut self) -> Option<Detached> {
        if self.waiting == 0 {
            return None;
        }
        // Taken: one send at a time.
        let writer = self.writer.take()?;
        self.waiting = 0;
        self.released = 0;
        self.taken = self.written;
        self.sent.began();
        Some(Detached {
            writer,
            queued: std::mem::take(&mut self.queued),
            lines: std::mem::replace(&mut self.lines, std::mem::take(&mut self.spare)),
            kinds: self.kinds.as_mut().map(std::mem::take).unwrap_or_default(),
            sent: Arc::clone(&self.sent),
        })
    }

    /// The send of `detached` is over, with `sent`. Returns whether it is
    /// the send that failed (then what waits is dropped: the client is
    /// gone), and the writer if the output was closed meanwhile (a client
    /// given up on, `ConnHandle::shut_down`), for the caller to drop once
    /// it let go of the lock: a writer's `Drop` may write (a `BufWriter`).
    pub fn attach(&mut self, detached: Detached, sent: io::Result<()>) -> (bool, Option<Writer>) {
        let Detached {
            writer,
            queued,
            mut lines,
            kinds,
            sent: _,
        } = detached;
        // Closed while it was out: the caller drops it, the peer sees the
        // end.
        let orphan = if self.closed {
            Some(writer)
        } else {
            self.writer = Some(writer);
            None
        };
        if self.queued.is_empty() {
            // Its (empty) list, kept for the next large line.
            self.queued = queued;
        }
        if let Some(mine) = self.kinds.as_mut().filter(|mine| mine.is_empty()) {
            // Its (empty) list, kept for the next lines.
            *mine = kinds;
        }
        lines.clear();
        // A buffer that grew for a large message is not kept.
        if lines.capacity() > 2 * BUFFER {
            lines = Out::with_capacity(BUFFER);
        }
        self.spare = lines;
        let failed = match sent {
            Err(e) if self.error.is_none() => {
                self.error = Some(e);
                self.drop_waiting();
                true
            }
            _ => false,
        };
        (failed, orphan)
    }

    /// Closes the output: nothing more is written. Returns the writer, to
    /// be flushed and dropped without the lock (the peer then sees the
    /// end), and the first failed send, if any. Called once nothing waits
    /// and no send is in progress, or with a send still in progress that
    /// is given up on: its writer is dropped when it comes back
    /// ([`Output::attach`]).
    pub fn close(&mut self) -> (Option<Writer>, Option<io::Error>) {
        self.closed = true;
        self.drop_waiting();
        (self.writer.take(), self.error.take())
    }

    /// Gives up on the client, which took too little of the output for too
    /// long (`Conn::let_go`): closed as by [`Output::close`], with `reason` as
    /// the output's failure, which the last `close` returns. Returns the
    /// writer if no send has it, to be dropped without the lock.
    pub fn give_up(&mut self, reason: io::Error) -> Option<Writer> {
        self.error.get_or_insert(reason);
        self.closed = true;
        self.drop_waiting();
        self.writer.take()
    }

    /// Whether the output was closed (or given up on).
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Drops what waits to be sent: nobody will send it.
    fn drop_waiting(&mut self) {
        (self.queued, self.lines, self.waiting) = (Vec::new(), Out::default(), 0);
        self.released = 0;
        if let Some(kinds) = &mut self.kinds {
            kinds.clear();
        }
        self.taken = self.written;
    }
}

#[cfg(test)]
mod tests;

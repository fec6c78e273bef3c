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
/// `slow_client::a_steady_slow_reader_on_a_pipe_is_not_let_go_while_a_publisher_waits`).
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
        if let Some(kinds) = &mut self.kinds {
            kinds.clear();
        }
        self.taken = self.written;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// What reached the writer, one entry per `write`.
    #[derive(Clone, Default)]
    struct Flushed(Arc<Mutex<Vec<Vec<u8>>>>);

    impl Write for Flushed {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().push(bytes.to_vec());
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Flushed {
        fn all(&self) -> Vec<u8> {
            self.0.lock().unwrap().concat()
        }
    }

    fn line(text: &[u8]) -> impl FnOnce(&mut Out) -> serde_json::Result<()> + '_ {
        move |out| {
            out.push(text);
            Ok(())
        }
    }

    #[test]
    fn lines_go_out_when_sent_and_nothing_once_closed() {
        let flushed = Flushed::default();
        let mut output = Output::new(Writer::Bytes(Box::new(flushed.clone())));
        output.write_line(LineKind::Message, line(b"reply"));
        assert!(flushed.all().is_empty(), "writing only collects");
        let mut detached = output.detach().expect("something to send");
        // Written while the send is in progress: sent next.
        output.write_line(LineKind::Message, line(b"next"));
        assert!(output.detach().is_none(), "one send at a time");
        let sent = detached.send();
        assert!(!output.attach(detached, sent).0);
        assert_eq!(flushed.all(), b"reply\n");
        let mut detached = output.detach().expect("what waited");
        let sent = detached.send();
        output.attach(detached, sent);
        assert_eq!(flushed.all(), b"reply\nnext\n");
        assert!(output.detach().is_none(), "nothing waits");
        output.write_line(LineKind::Message, line(b"dropped at close"));
        let (writer, error) = output.close();
        assert!(writer.is_some() && error.is_none());
        output.write_line(LineKind::Message, line(b"after close"));
        assert_eq!(output.waiting(), 0);
        assert_eq!(flushed.all(), b"reply\nnext\n");
    }

    /// The client's clock moves as the writer of a send in progress takes
    /// each 16 KiB, not only when the next send begins (the rule for a
    /// client too slow to keep looks at it:
    /// `slow_client::a_steady_slow_reader_gets_every_reply_with_a_short_grace`).
    #[test]
    fn the_clock_moves_while_a_send_is_in_progress() {
        struct Pages;
        impl Write for Pages {
            fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
                std::thread::sleep(Duration::from_millis(1));
                Ok(bytes.len().min(4096))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut output = Output::new(Writer::Bytes(Box::new(Pages)));
        output.push_line(LineKind::Message, vec![b'x'; 40 * 1024]);
        let mut detached = output.detach().unwrap();
        let began = output.sent.at.load(Ordering::Relaxed);
        let sent = detached.send();
        assert!(sent.is_ok());
        assert!(
            output.sent.at.load(Ordering::Relaxed) > began,
            "the clock stood still through 40 KiB"
        );
        output.attach(detached, sent);
    }

    /// A byte stream that takes an irregular part of what it is handed
    /// (1 to all of it), recording each `write` it was handed.
    struct Irregular {
        got: Vec<u8>,
        asked: Vec<usize>,
        seed: u64,
    }

    impl Write for Irregular {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.asked.push(bytes.len());
            self.seed = self.seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            let n = 1 + (self.seed >> 33) as usize % bytes.len();
            self.got.extend_from_slice(&bytes[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A reply of 16 MiB between small lines reaches a writer that takes
    /// irregular parts whole and in order, handed at most
    /// [`WRITE_AT_MOST`] a `write`, and every byte is counted.
    #[test]
    fn a_large_reply_reaches_an_irregular_writer_whole_in_order_in_pieces() {
        let shared = Arc::new(Mutex::new(Irregular {
            got: Vec::new(),
            asked: Vec::new(),
            seed: 7,
        }));
        struct Share(Arc<Mutex<Irregular>>);
        impl Write for Share {
            fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
                self.0.lock().unwrap().write(bytes)
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut output = Output::new(Writer::Bytes(Box::new(Share(Arc::clone(&shared)))));
        let large: Vec<u8> = (0..16 * 1024 * 1024)
            .map(|i| b'a' + (i % 26) as u8)
            .collect();
        output.write_line(LineKind::Message, line(b"before"));
        output.push_line(LineKind::Message, large.clone());
        output.write_line(LineKind::Message, line(b"after"));
        let mut detached = output.detach().unwrap();
        let sent = detached.send();
        assert!(sent.is_ok());
        output.attach(detached, sent);
        let mut want = b"before\n".to_vec();
        want.extend_from_slice(&large);
        want.extend_from_slice(b"\nafter\n");
        let irregular = shared.lock().unwrap();
        assert!(irregular.got == want, "whole and in order");
        assert!(irregular.asked.iter().all(|&n| n <= WRITE_AT_MOST));
    }

    /// The let-go's clock moves when a send begins, and then once the
    /// client took a piece's worth since it last moved: a page taken now
    /// and then does not move it (a client reading 800 bytes a second held
    /// every publisher at its pace).
    #[test]
    fn the_clock_moves_once_a_piece_is_taken_not_with_every_page() {
        let took = Took::default();
        let at = || took.at.load(Ordering::Relaxed);
        took.began();
        let began = at();
        for _ in 0..3 {
            std::thread::sleep(Duration::from_millis(1));
            took.add(4096);
            assert_eq!(at(), began, "a page moved the clock");
        }
        std::thread::sleep(Duration::from_millis(1));
        took.add(4096);
        assert!(at() > began, "16 KiB in pages did not move it");
        let moved = at();
        std::thread::sleep(Duration::from_millis(1));
        took.add(4096);
        assert_eq!(at(), moved, "the count starts again after it moved");
        std::thread::sleep(Duration::from_millis(1));
        took.began();
        assert!(at() > moved, "a send's beginning did not move it");
    }

    /// A writer that takes nothing (`Ok(0)`) fails the send, and does not
    /// move the client's clock: only a send's beginning and bytes taken do.
    #[test]
    fn a_writer_that_takes_nothing_fails_and_leaves_the_clock_alone() {
        struct Nothing;
        impl Write for Nothing {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                std::thread::sleep(Duration::from_millis(20));
                Ok(0)
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut output = Output::new(Writer::Bytes(Box::new(Nothing)));
        output.write_line(LineKind::Message, line(b"never taken"));
        let mut detached = output.detach().unwrap();
        let began = output.idle();
        let sent = detached.send();
        assert_eq!(
            sent.as_ref().map_err(io::Error::kind).err(),
            Some(io::ErrorKind::WriteZero)
        );
        assert!(output.idle() >= began + Duration::from_millis(20));
        output.write_line(LineKind::Message, line(b"while sending"));
        assert!(output.detach().is_none(), "no send begins while one is out");
        assert!(
            output.idle() >= Duration::from_millis(20),
            "nor resets the clock"
        );
        assert!(output.attach(detached, sent).0);
    }

    #[test]
    fn a_line_longer_than_the_buffer_goes_out_whole_in_one_send() {
        let flushed = Flushed::default();
        let mut output = Output::new(Writer::Bytes(Box::new(flushed.clone())));
        let long = vec![b'x'; 3 * BUFFER];
        output.write_line(LineKind::Message, line(b"short"));
        output.write_line(LineKind::Message, line(&long));
        assert_eq!(flushed.all(), b"", "nothing is written under the lock");
        let mut detached = output.detach().unwrap();
        let sent = detached.send();
        output.attach(detached, sent);
        let writes = flushed.0.lock().unwrap().clone();
        // One send: both lines whole, in order, in `write(2)`s of at most
        // `WRITE_AT_MOST` each.
        let mut expected = b"short\n".to_vec();
        expected.extend_from_slice(&long);
        expected.push(b'\n');
        assert_eq!(writes.concat(), expected);
        assert!(writes.iter().all(|w| w.len() <= WRITE_AT_MOST));
        assert!(
            output.spare.capacity() <= 2 * BUFFER,
            "a grown buffer is not kept"
        );
    }

    #[test]
    fn a_large_line_is_moved_in_and_sent_in_its_place() {
        let flushed = Flushed::default();
        let mut output = Output::new(Writer::Bytes(Box::new(flushed.clone())));
        // Room for the newline, so that pushing it cannot move the bytes.
        let mut large = Vec::with_capacity(2 * BUFFER + 1);
        large.resize(2 * BUFFER, b'L');
        let at = large.as_ptr();
        output.write_line(LineKind::Message, line(b"before"));
        output.push_line(LineKind::Message, large);
        assert_eq!(output.queued[1].as_ptr(), at, "moved, not copied");
        output.push_line(LineKind::Message, b"after".to_vec());
        assert_eq!(output.waiting(), 7 + 2 * BUFFER + 1 + 6);
        let mut detached = output.detach().unwrap();
        let sent = detached.send();
        output.attach(detached, sent);
        let mut want = b"before\n".to_vec();
        want.extend_from_slice(&[b'L'; 2 * BUFFER]);
        want.extend_from_slice(b"\nafter\n");
        assert_eq!(flushed.all(), want);
        assert_eq!(output.waiting(), 0);
    }

    #[test]
    fn a_line_whose_encoding_fails_is_taken_back() {
        let mut output = Output::new(Writer::Bytes(Box::new(Flushed::default())));
        output.write_line(LineKind::Message, line(b"kept"));
        output.write_line(LineKind::Message, |out| {
            out.push(b"{\"half");
            Err(serde::ser::Error::custom("cannot encode"))
        });
        assert_eq!(output.lines.as_slice(), b"kept\n");
    }

    #[test]
    fn a_writer_knows_when_its_lines_are_on_their_way() {
        let mut output = Output::new(Writer::Bytes(Box::new(Flushed::default())));
        output.write_line(LineKind::Message, line(b"one"));
        let mine = output.written();
        assert!(!output.taken(mine), "written, not taken");
        let mut detached = output.detach().unwrap();
        assert!(output.taken(mine), "taken by the send in progress");
        output.write_line(LineKind::Message, line(b"two"));
        assert!(!output.taken(output.written()), "written behind the send");
        let sent = detached.send();
        output.attach(detached, sent);
        assert!(!output.taken(output.written()), "nobody took it yet");
        let mut detached = output.detach().unwrap();
        let sent = detached.send();
        output.attach(detached, sent);
        assert!(output.taken(output.written()));
    }

    /// Closed or given up on while a send is out: no second send starts
    /// (the writer is out, and nothing more is written), every writer's
    /// lines count as taken so nobody waits for them, nothing counts as
    /// sending any more, and the writer, when it comes back, is handed to
    /// the caller to drop rather than kept: only the bytes of the send in
    /// progress reach it, whole.
    #[test]
    fn closed_or_given_up_on_with_a_send_out_no_other_send_starts() {
        for give_up in [false, true] {
            let flushed = Flushed::default();
            let mut output = Output::new(Writer::Bytes(Box::new(flushed.clone())));
            output.write_line(LineKind::Message, line(b"out"));
            let mut detached = output.detach().expect("something to send");
            assert!(output.sending());
            output.write_line(LineKind::Message, line(b"behind it"));
            if give_up {
                let writer = output.give_up(io::Error::from(io::ErrorKind::TimedOut));
                assert!(writer.is_none(), "the send has the writer");
            } else {
                let (writer, error) = output.close();
                assert!(writer.is_none() && error.is_none());
            }
            assert!(!output.sending() && output.is_closed());
            assert!(output.taken(output.written()), "nobody waits for theirs");
            output.write_line(LineKind::Message, line(b"after"));
            assert_eq!(output.waiting(), 0);
            assert!(output.detach().is_none(), "a second send on the writer");
            let sent = detached.send();
            let (failed, orphan) = output.attach(detached, sent);
            assert!(!failed && orphan.is_some(), "the writer goes to be dropped");
            assert!(!output.sending() && output.detach().is_none());
            assert_eq!(flushed.all(), b"out\n");
        }
    }

    struct Broken;

    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        }
        fn flush(&mut self) -> io::Result<()> {
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        }
    }

    #[test]
    fn the_first_failure_is_reported_once_and_kept() {
        let mut output = Output::new(Writer::Bytes(Box::new(Broken)));
        output.write_line(LineKind::Message, line(b"buffered"));
        let mut detached = output.detach().unwrap();
        output.write_line(LineKind::Message, line(b"behind it"));
        let sent = detached.send();
        assert!(output.attach(detached, sent).0, "this send failed");
        assert_eq!(output.waiting(), 0, "what waited is dropped");
        output.write_line(LineKind::Message, line(b"x"));
        assert!(output.detach().is_none(), "nothing after a failure");
        assert_eq!(
            output.close().1.map(|e| e.kind()),
            Some(io::ErrorKind::BrokenPipe)
        );
    }

    /// A line and its kind, as a writer of lines was given it.
    type Line = (LineKind, Vec<u8>);

    /// What a writer of lines was given.
    #[derive(Clone, Default)]
    struct Told(Arc<Mutex<Vec<Line>>>);

    impl LineWriter for Told {
        fn line(&mut self, kind: LineKind, line: &[u8]) -> io::Result<()> {
            self.0.lock().unwrap().push((kind, line.to_vec()));
            Ok(())
        }
    }

    #[test]
    fn a_writer_of_lines_is_told_each_line_and_its_kind() {
        let told = Told::default();
        let mut output = Output::new(Writer::Lines(Box::new(told.clone())));
        let error = LineKind::Response {
            error: Some(-32601),
        };
        let large = vec![b'L'; 2 * BUFFER];
        output.write_line(LineKind::Message, line(b"progress"));
        output.push_line(LineKind::Message, large.clone());
        output.write_line(error, line(b"reply"));
        let mut detached = output.detach().unwrap();
        let sent = detached.send();
        output.attach(detached, sent);
        output.push_line(LineKind::Response { error: None }, b"next".to_vec());
        let mut detached = output.detach().unwrap();
        let sent = detached.send();
        output.attach(detached, sent);
        assert_eq!(
            *told.0.lock().unwrap(),
            [
                (LineKind::Message, b"progress".to_vec()),
                (LineKind::Message, large),
                (error, b"reply".to_vec()),
                (LineKind::Response { error: None }, b"next".to_vec()),
            ]
        );
    }
}

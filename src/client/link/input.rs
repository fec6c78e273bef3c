//! The server's input, shared by the link's writer thread and the callers.
//!
//! A caller never blocks on the server's input (a timeout or a
//! cancellation must always fire), so lines normally go through a channel
//! to the writer thread. That hand-off costs a thread wake-up on every
//! call (BENCHMARKS.md, "The client benchmark"). When the input is a pipe
//! in non-blocking mode (a spawned server, on Unix), a caller writes its
//! own line instead, if nothing is queued and nobody is writing: a write
//! that cannot go through at once (the server is not reading) leaves the
//! rest to the writer thread, which waits for the pipe. Lines keep their
//! order: a caller writes directly only while no line is queued or being
//! written, checked under the input's lock.
//!
//! What waits for the writer thread is bounded in bytes
//! ([`MAX_QUEUED_BYTES`]): a server that stops reading its input holds at
//! most that (and one line) of the client's memory, and a request sent past
//! it fails at once with an error that says so, never waiting (a caller
//! never blocks on the server's input).

use std::io::{self, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

#[cfg(unix)]
use std::os::fd::{AsFd, OwnedFd};

use crossbeam_channel::{Receiver, Sender};

use crate::client::notes::Notes;
use crate::client::wire::{Wire, WireDirection};
use crate::error::Error;
use crate::sync::lock;

/// The most bytes of lines that wait for the writer thread: past it, a
/// line is refused (a request fails at once, saying why) rather than
/// queued, so a server that does not read its input costs the client a
/// bounded amount of memory. A line is always taken when nothing waits,
/// whatever its size.
pub(crate) const MAX_QUEUED_BYTES: usize = 16 * 1024 * 1024;

/// A line for the writer thread, its newline included.
pub(crate) struct Queued {
    bytes: Vec<u8>,
    /// The wire hook saw it already (a caller wrote its start).
    traced: bool,
}

/// The server's input as a link starts with it: any writer, or a spawned
/// server's stdin pipe, which callers may write to directly.
pub(crate) struct ServerInput {
    writer: Box<dyn Write + Send>,
    #[cfg(unix)]
    nonblocking: Option<OwnedFd>,
}

impl ServerInput {
    /// Any byte stream: every line goes through the writer thread.
    pub fn stream(writer: Box<dyn Write + Send>) -> ServerInput {
        ServerInput {
            writer,
            #[cfg(unix)]
            nonblocking: None,
        }
    }

    /// A spawned server's stdin. On Unix the pipe is switched to
    /// non-blocking mode, so that a caller can write its own line without
    /// ever blocking; if that fails, it is used like any stream.
    pub fn pipe(stdin: std::process::ChildStdin) -> ServerInput {
        #[cfg(unix)]
        {
            use nix::fcntl::{FcntlArg, OFlag, fcntl};
            let nonblocking = stdin.as_fd().try_clone_to_owned().ok().filter(|fd| {
                let flags = fcntl(fd, FcntlArg::F_GETFL).map(OFlag::from_bits_truncate);
                flags.is_ok_and(|flags| {
                    fcntl(fd, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK)).is_ok()
                })
            });
            ServerInput {
                writer: Box::new(stdin),
                nonblocking,
            }
        }
        #[cfg(not(unix))]
        ServerInput::stream(Box::new(stdin))
    }
}

/// The server's input.
pub(crate) struct Input {
    /// `None` once closed.
    stream: Mutex<Option<Stream>>,
    /// Lines queued for the writer thread and not yet written.
    queued: AtomicUsize,
    /// Their bytes, at most [`MAX_QUEUED_BYTES`] (and one line).
    queued_bytes: AtomicUsize,
    /// Every byte accepted for the server so far: with `unread`, whether
    /// it has read anything at all ([`Input::read_nothing`]).
    sent: AtomicUsize,
    wire: Wire,
    /// Where a panic of the wire hook is noted.
    notes: Notes,
}

struct Stream {
    writer: Box<dyn Write + Send>,
    /// A duplicate of the writer's descriptor, a pipe in non-blocking
    /// mode: callers may write to it directly.
    #[cfg(unix)]
    nonblocking: Option<OwnedFd>,
}

impl Input {
    pub fn new(input: ServerInput, wire: Wire, notes: Notes) -> Arc<Input> {
        Arc::new(Input {
            stream: Mutex::new(Some(Stream {
                writer: input.writer,
                #[cfg(unix)]
                nonblocking: input.nonblocking,
            })),
            queued: AtomicUsize::new(0),
            queued_bytes: AtomicUsize::new(0),
            sent: AtomicUsize::new(0),
            wire,
            notes,
        })
    }

    /// Shows a line to the wire hook; a panic in it is caught (the line is
    /// still written, and the writer thread goes on).
    fn trace(&self, line: &[u8]) {
        if let Some(wire) = &self.wire {
            let line = line.strip_suffix(b"\n").unwrap_or(line);
            let _ = self.notes.guard("wire", || wire(WireDirection::Sent, line));
        }
    }

    /// Sends one line (its newline included): written at once when that
    /// cannot block, otherwise queued for the writer thread, unless
    /// [`MAX_QUEUED_BYTES`] wait already. `Err`: the input is gone
    /// ([`Error::Disconnected`]), or the line was refused ([`Error::Io`]).
    pub fn send(&self, line: Vec<u8>, queue: &Sender<Queued>) -> Result<(), Error> {
        #[cfg(unix)]
        if self.queued.load(Ordering::SeqCst) == 0
            && let Ok(mut stream) = self.stream.try_lock()
            && let Some(Stream {
                nonblocking: Some(fd),
                ..
            }) = stream.as_mut()
            && self.queued.load(Ordering::SeqCst) == 0
        {
            self.trace(&line);
            // Counted before it can be read, so that `read_nothing` never
            // takes it for bytes of an earlier line.
            self.sent.fetch_add(line.len(), Ordering::SeqCst);
            return match write_some(fd, &line) {
                Ok(n) if n == line.len() => Ok(()),
                Ok(n) => {
                    // The rest waits for the pipe, on the writer thread;
                    // queued before the lock is released, so that nothing
                    // overtakes it, and whatever waits already (its start
                    // is written).
                    let rest = line[n..].to_vec();
                    self.queued_bytes.fetch_add(rest.len(), Ordering::SeqCst);
                    self.queued.fetch_add(1, Ordering::SeqCst);
                    queue
                        .send(Queued {
                            bytes: rest,
                            traced: true,
                        })
                        .map_err(|_| Error::Disconnected)
                }
                Err(_) => Err(Error::Disconnected),
            };
        }
        let len = line.len();
        let waiting = self.queued_bytes.fetch_add(len, Ordering::SeqCst);
        if waiting > 0 && waiting + len > MAX_QUEUED_BYTES {
            self.queued_bytes.fetch_sub(len, Ordering::SeqCst);
            return Err(Error::Io(io::Error::other(format!(
                "the server has not read the {waiting} bytes queued for its input, and the client queues at most {MAX_QUEUED_BYTES}: it is stuck or slow, and this message of {len} bytes was not sent"
            ))));
        }
        self.queued.fetch_add(1, Ordering::SeqCst);
        self.sent.fetch_add(len, Ordering::SeqCst);
        queue
            .send(Queued {
                bytes: line,
                traced: false,
            })
            .map_err(|_| Error::Disconnected)
    }

    /// Whether a line of `len` bytes would now be refused (see
    /// [`send`](Input::send)); by the time it is sent that may have
    /// changed.
    pub fn would_refuse(&self, len: usize) -> bool {
        let waiting = self.queued_bytes.load(Ordering::SeqCst);
        waiting > 0 && waiting.saturating_add(len) > MAX_QUEUED_BYTES
    }

    /// How many bytes of what was sent the server has not read yet: in its
    /// stdin pipe, or still queued here. `None` when that cannot be known:
    /// the input is not a pipe, or this is not Linux (where `FIONREAD` on
    /// the pipe's write end counts what is in it). Whether a server has
    /// read anything at all is the one sign that it runs: a server still
    /// being installed (a first `npx` or `uvx` run) has not.
    pub fn unread(&self) -> Option<usize> {
        let queued = self.queued_bytes.load(Ordering::SeqCst);
        let Ok(stream) = self.stream.try_lock() else {
            // The writer thread holds the input while it waits for the
            // pipe to drain: the server has not read everything.
            return Some(queued.max(1));
        };
        #[cfg(target_os = "linux")]
        if let Some(fd) = stream.as_ref().and_then(|s| s.nonblocking.as_ref()) {
            return pipe_unread(fd).map(|n| n + queued);
        }
        drop(stream);
        None
    }

    /// Whether the server has read none of what was sent to it: a server
    /// that reads its input has taken at least the first line, though the
    /// last one sent may still wait in the pipe. `None` where that cannot
    /// be known (see [`unread`](Input::unread)).
    pub fn read_nothing(&self) -> Option<bool> {
        let sent = self.sent.load(Ordering::SeqCst);
        self.unread().map(|unread| sent > 0 && unread >= sent)
    }

    /// The writer thread: writes what is queued, flushing once the queue
    /// is empty, and closes the input when every sender is gone or a
    /// write fails.
    pub fn write_loop(&self, lines: Receiver<Queued>) {
        while let Ok(first) = lines.recv() {
            let mut stream = lock(&self.stream);
            let Some(out) = stream.as_mut() else {
                return;
            };
            let mut next = Some(first);
            let mut ok = true;
            while let Some(line) = next {
                if !line.traced {
                    self.trace(&line.bytes);
                }
                ok = out.write_waiting(&line.bytes).is_ok();
                self.queued_bytes
                    .fetch_sub(line.bytes.len(), Ordering::SeqCst);
                self.queued.fetch_sub(1, Ordering::SeqCst);
                if !ok {
                    break;
                }
                next = lines.try_recv().ok();
            }
            if !ok || out.writer.flush().is_err() {
                // Closed: callers' lines fail from here on, as the
                // connection's end (`Error::Disconnected`, once this
                // returns and the queue's receiver is gone), not as a
                // backlog of lines that will never be written.
                stream.take();
                self.queued_bytes.store(0, Ordering::SeqCst);
                return;
            }
        }
        // Every sender is gone: closing the stream closes the server's input.
        lock(&self.stream).take();
    }
}

impl Stream {
    /// Writes all of `bytes`, waiting for a non-blocking pipe to drain.
    fn write_waiting(&mut self, bytes: &[u8]) -> io::Result<()> {
        #[cfg(unix)]
        if let Some(fd) = &self.nonblocking {
            let mut rest = bytes;
            while !rest.is_empty() {
                // 0: the pipe is full (see `write_some`).
                let n = write_some(fd, rest)?;
                rest = &rest[n..];
                if !rest.is_empty() {
                    wait_writable(fd)?;
                }
            }
            return Ok(());
        }
        self.writer.write_all(bytes)
    }
}

/// The bytes in a pipe, read through its write end: `FIONREAD` counts
/// them on either end of a Linux pipe.
#[cfg(target_os = "linux")]
#[allow(
    unsafe_code,
    reason = "one ioctl that writes an int: nix has no safe FIONREAD"
)]
fn pipe_unread(fd: &OwnedFd) -> Option<usize> {
    use std::os::fd::AsRawFd;
    let mut n: nix::libc::c_int = 0;
    // SAFETY: FIONREAD writes one `c_int` through its pointer, which points
    // at `n`, alive for the call; `fd` is an open descriptor (borrowed, so
    // not closed while the call runs). A descriptor that is no pipe fails
    // with an error, which is `None` here.
    let res = unsafe { nix::libc::ioctl(fd.as_raw_fd(), nix::libc::FIONREAD, &mut n) };
    (res == 0).then(|| usize::try_from(n).unwrap_or(0))
}

/// Writes what the pipe takes now: the count, possibly short (0 when the
/// pipe is full).
#[cfg(unix)]
fn write_some(fd: &OwnedFd, bytes: &[u8]) -> io::Result<usize> {
    loop {
        match nix::unistd::write(fd, bytes) {
            Ok(n) => return Ok(n),
            Err(nix::errno::Errno::EAGAIN) => return Ok(0),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(io::Error::from(e)),
        }
    }
}

/// Blocks until the pipe can take more.
#[cfg(unix)]
fn wait_writable(fd: &OwnedFd) -> io::Result<()> {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLOUT)];
    loop {
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) => return Ok(()),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(io::Error::from(e)),
        }
    }
}

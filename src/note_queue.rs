//! Notes handed to a thread of their own, so that writing one never holds
//! up the thread that has something to say.
//!
//! Why: the client's reader thread and the server's reader both note
//! problems with the peer's input (a line that is not JSON, a line over the
//! limit, a request a server may not send). Written where they happen, one
//! `eprintln!` blocks the reader, and with it every reply, for as long as
//! stderr cannot take the line: while the application holds
//! `std::io::stderr().lock()` (a command-line tool that locks it for its
//! whole run), or forever once stderr is a pipe nobody reads and its buffer
//! is full. So a note is only queued where it happens: a bounded channel
//! takes it without blocking, and a note thread, started on the first
//! note, hands it to the hook. When the queue is full (the hook is stuck),
//! notes are dropped and counted, and the count is noted once the hook
//! takes notes again. A process that notes nothing starts no thread.
//!
//! What waits is bounded in bytes as well as in number: a note is for a
//! person, so each is cut to its first [`NOTE_BYTES`] (a server's log
//! message for no request becomes a note of its whole data, up to the
//! line limit), and a stuck hook holds at most 256 of them. A hook that
//! panics loses the note it panicked on, and only that one: the thread
//! goes on with the next.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender, TrySendError};

/// A hook that takes one note.
pub(crate) type NoteFn = dyn Fn(&str) + Send + Sync;

/// How many notes wait for the hook before more are dropped: enough for a
/// burst (the note limiter lets 10 a second through), few enough that a
/// stuck hook costs little memory.
const CAPACITY: usize = 256;

/// The most of a note's text that is kept (4 KiB); a longer note is cut
/// at a character boundary and ends with `… [cut: N bytes in all]`, as a
/// server's stderr line is. With [`CAPACITY`], a stuck hook holds about
/// 1 MiB of notes at most.
pub(crate) const NOTE_BYTES: usize = 4 * 1024;

/// What the note thread takes.
enum Item {
    Note(String),
    /// Answered once every note queued before it was handed to the hook.
    Flush(Sender<()>),
}

/// A queue of notes in front of one hook.
pub(crate) struct NoteQueue {
    hook: Arc<NoteFn>,
    /// The note thread's queue, once the first note started it; `None`
    /// if the thread could not be started (notes are then dropped).
    tx: OnceLock<Option<Sender<Item>>>,
    /// Notes dropped because the queue was full, not yet reported.
    dropped: Arc<AtomicU64>,
    thread_name: &'static str,
}

impl NoteQueue {
    /// A queue whose note thread (named `thread_name`) hands each note to
    /// `hook`.
    pub fn new(thread_name: &'static str, hook: Arc<NoteFn>) -> NoteQueue {
        NoteQueue {
            hook,
            tx: OnceLock::new(),
            dropped: Arc::new(AtomicU64::new(0)),
            thread_name,
        }
    }

    /// A queue whose hook writes each note to stderr as one line, after
    /// `prefix`, its control characters escaped ([`for_terminal`]).
    pub fn stderr(thread_name: &'static str, prefix: &'static str) -> NoteQueue {
        NoteQueue::new(
            thread_name,
            // `eprintln!`, which a test harness captures (the thread
            // inherits the capture of the thread that started it). Should
            // stderr fail, its panic is caught (`note_loop`) and the note
            // lost: it had nowhere to go.
            Arc::new(move |line: &str| eprintln!("{prefix}{}", for_terminal(line))),
        )
    }

    /// Queues `text` for the hook, cut to [`NOTE_BYTES`]; never blocks.
    /// Dropped (and counted) if the queue is full.
    pub fn push(&self, text: &str) {
        let Some(tx) = self.sender() else {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        };
        match tx.try_send(Item::Note(cut(text))) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Waits until every note queued so far was handed to the hook, at
    /// most `timeout` (a stuck hook must not hold up the caller).
    pub fn flush(&self, timeout: Duration) {
        let Some(Some(tx)) = self.tx.get() else {
            return; // Nothing was ever queued.
        };
        // Capacity 1: the note thread answers once and never waits.
        let (done_tx, done_rx) = crossbeam_channel::bounded(1);
        if tx.send_timeout(Item::Flush(done_tx), timeout).is_ok() {
            let _ = done_rx.recv_timeout(timeout);
        }
    }

    /// The note thread's queue, starting the thread on the first call.
    fn sender(&self) -> Option<&Sender<Item>> {
        self.tx
            .get_or_init(|| {
                let (tx, rx) = crossbeam_channel::bounded(CAPACITY);
                let hook = Arc::clone(&self.hook);
                let dropped = Arc::clone(&self.dropped);
                // The thread holds no sender: it ends once the queue is
                // dropped and drained.
                thread::Builder::new()
                    .name(self.thread_name.into())
                    .spawn(move || note_loop(&rx, &*hook, &dropped))
                    .ok()
                    .map(|_| tx)
            })
            .as_ref()
    }
}

impl Drop for NoteQueue {
    /// Lets the note thread write what is queued before the process may
    /// exit (a server that noted bad input and then saw EOF), waiting no
    /// more than 100 ms for a stuck hook.
    fn drop(&mut self) {
        self.flush(Duration::from_millis(100));
    }
}

/// `text` with its control characters escaped (`\u{1b}`), tabs but
/// kept, and the bidirectional controls and line separators too, as the
/// command line escapes a server's text (`src/bin/mcp-stdio/escape.rs`):
/// a note quotes what a peer wrote (a method name, a server's last stderr
/// lines), and stderr is often a terminal, where a peer's escape sequences
/// would retitle the window, clear the screen or forge lines (review
/// client15).
fn for_terminal(text: &str) -> std::borrow::Cow<'_, str> {
    let escaped = |c: char| {
        (c.is_control() && c != '\t')
            || matches!(
                c,
                '\u{61c}'
                    | '\u{200e}'
                    | '\u{200f}'
                    | '\u{2028}'
                    | '\u{2029}'
                    | '\u{202a}'..='\u{202e}'
                    | '\u{2066}'..='\u{2069}'
            )
    };
    if !text.chars().any(escaped) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if escaped(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// `text`, or its first [`NOTE_BYTES`] (at a character boundary) and how
/// long it was.
fn cut(text: &str) -> String {
    if text.len() <= NOTE_BYTES {
        return text.to_owned();
    }
    let kept = &text[..text.floor_char_boundary(NOTE_BYTES)];
    format!("{kept} … [cut: {} bytes in all]", text.len())
}

/// The note thread: hands each note to `hook`, and after it the count of
/// notes dropped while the hook was stuck, and of those it panicked on.
///
/// The hook is the application's (`ClientBuilder::trace`) or stderr's: a
/// panic in it is caught, as the client's threads catch their hooks'
/// (`Notes::guard`), and costs that note only. Uncaught, it ended this
/// thread, and every later note, problems included, was dropped without
/// a word.
fn note_loop(rx: &Receiver<Item>, hook: &NoteFn, dropped: &AtomicU64) {
    let call = |text: &str| catch_unwind(AssertUnwindSafe(|| hook(text))).is_ok();
    let mut panicked = 0u64;
    while let Ok(item) = rx.recv() {
        match item {
            Item::Note(text) => {
                if !call(&text) {
                    panicked += 1;
                    continue;
                }
            }
            Item::Flush(done) => {
                let _ = done.send(());
                continue;
            }
        }
        // Told once the hook takes a note again.
        let lost = dropped.swap(0, Ordering::Relaxed);
        if lost > 0 {
            call(&format!(
                "({lost} notes were dropped: nothing took them while this was being written)"
            ));
        }
        if panicked > 0 {
            let told = call(&format!(
                "(the note hook panicked on {panicked} notes: they were lost, the panics caught)"
            ));
            if told {
                panicked = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    /// Review client15: what the default stderr hook writes keeps a
    /// peer's tabs and printable text, and escapes its controls, bidi
    /// overrides and line breaks.
    #[test]
    fn a_note_for_the_terminal_has_its_controls_escaped() {
        use super::for_terminal;
        assert_eq!(for_terminal("plain\ttext é"), "plain\ttext é");
        assert_eq!(
            for_terminal("a\x1b]0;t\x07b\nc\u{9b}d\u{202e}e\u{2028}"),
            "a\\u{1b}]0;t\\u{7}b\\u{a}c\\u{9b}d\\u{202e}e\\u{2028}"
        );
    }

    use super::*;
    use std::sync::Mutex;

    #[test]
    fn a_stuck_hook_never_blocks_the_noter_and_the_dropped_are_counted() {
        let (release_tx, release_rx) = crossbeam_channel::bounded::<()>(0);
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let sink = Arc::clone(&seen);
        let queue = NoteQueue::new(
            "test-notes",
            Arc::new(move |line: &str| {
                if line == "first" {
                    // Stuck until the test lets go, as a hook writing to
                    // a full pipe is.
                    let _ = release_rx.recv_timeout(Duration::from_secs(10));
                }
                sink.lock().unwrap().push(line.to_owned());
            }),
        );
        queue.push("first");
        // The first note may still be queued: fill to one past the brim.
        for n in 0..=CAPACITY {
            queue.push(&format!("note {n}"));
        }
        // Every push returned although the hook is stuck.
        release_tx.send(()).unwrap();
        queue.flush(Duration::from_secs(10));
        let seen = seen.lock().unwrap();
        assert_eq!(seen[0], "first");
        let lost: u64 = seen
            .iter()
            .find_map(|l| l.strip_prefix('(')?.split(' ').next()?.parse().ok())
            .expect("a count of the dropped notes");
        let notes = seen.iter().filter(|l| l.starts_with("note ")).count() as u64;
        assert!(lost >= 1, "{seen:?}");
        assert_eq!(notes + lost, CAPACITY as u64 + 1, "{seen:?}");
    }

    /// Review of issue 47: a note is cut to its first 4 KiB, at a
    /// character boundary, and says how long it was (a server's log
    /// message of 16 MiB for no request was held whole while it waited).
    #[test]
    fn a_long_note_is_cut_at_a_character_boundary() {
        assert_eq!(cut("short"), "short");
        let exact = "x".repeat(NOTE_BYTES);
        assert_eq!(cut(&exact), exact);
        // 'é' is two bytes: the limit falls inside the last one.
        let long = format!("{}é{}", "x".repeat(NOTE_BYTES - 1), "y".repeat(10_000));
        let note = cut(&long);
        let suffix = format!(" … [cut: {} bytes in all]", long.len());
        assert_eq!(note, format!("{}{suffix}", "x".repeat(NOTE_BYTES - 1)));
    }

    /// Review of issue 47, item 6: a hook that panics on one note loses
    /// that note only; the next is handed to it, and the panic is counted
    /// (the panic ended the note thread, and every later note was lost).
    #[test]
    fn a_hook_that_panics_loses_only_that_note() {
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let sink = Arc::clone(&seen);
        let queue = NoteQueue::new(
            "test-notes",
            Arc::new(move |line: &str| {
                if line == "boom" {
                    // Off the test's output: the payload is not a string
                    // the default panic message would show anyway.
                    std::panic::resume_unwind(Box::new(0u8));
                }
                sink.lock().unwrap().push(line.to_owned());
            }),
        );
        queue.push("before");
        queue.push("boom");
        queue.push("after");
        queue.flush(Duration::from_secs(10));
        let seen = seen.lock().unwrap();
        assert_eq!(seen[..2], ["before", "after"], "{seen:?}");
        assert!(
            seen[2].starts_with("(the note hook panicked on 1 notes"),
            "{seen:?}"
        );
    }

    #[test]
    fn a_queue_that_notes_nothing_starts_no_thread() {
        let queue = NoteQueue::stderr("test-notes", "test: ");
        queue.flush(Duration::from_secs(1));
        assert!(queue.tx.get().is_none());
    }
}

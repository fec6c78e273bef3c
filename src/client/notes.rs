//! Where the client's own notes go, and the server's log messages that no
//! request took.
//!
//! Quiet by default: an application that embeds the client in a command-line
//! tool must see nothing on stderr while everything works. So notes come in
//! two kinds. Problems (a line from the server that could not be read, a
//! protocol violation, a dead or restarted server) go to stderr unless the
//! application set [`ClientBuilder::trace`](crate::ClientBuilder::trace).
//! Information (the era the probe settled on, a late notification for a
//! subscription already ended, a log message nobody asked for) goes nowhere
//! unless the application set a trace, which then gets both kinds.
//!
//! No note is written where it happens: each is queued for a note thread
//! that hands it to stderr or the trace (see `note_queue`), so the reader
//! thread keeps routing replies while stderr is locked by the application
//! or is a full pipe nobody reads, and a slow trace holds up nothing.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::note_limiter::NoteLimiter;
use crate::note_queue::{NoteFn, NoteQueue};
use crate::types::LoggingMessageNotificationParams;

/// The client-level log callback (`ClientBuilder::on_log`).
pub(crate) type LogFn = dyn Fn(&LoggingMessageNotificationParams) + Send + Sync;

/// The client's note hooks and its client-level log callback.
#[derive(Clone)]
pub(crate) struct Notes {
    /// Where problems go, and information too when `info` is set.
    queue: Arc<NoteQueue>,
    /// Whether information is noted (a trace is set).
    info: bool,
    log: Option<Arc<LogFn>>,
    /// The client's requests are many callers' (a proxy's, see
    /// [`Notes::serve_many_callers`]); shared by the client's links.
    many_callers: Arc<AtomicBool>,
}

/// The note thread's name.
const THREAD: &str = "mcp-client-notes";

impl Default for Notes {
    fn default() -> Notes {
        Notes {
            queue: Arc::new(NoteQueue::stderr(THREAD, "mcp-stdio client: ")),
            info: false,
            log: None,
            many_callers: Arc::default(),
        }
    }
}

impl Notes {
    /// Sends every note, problems and information, to `hook`.
    pub fn set_trace(&mut self, hook: Arc<NoteFn>) {
        self.queue = Arc::new(NoteQueue::new(THREAD, hook));
        self.info = true;
    }

    /// Sends the problems to `hook`; information goes nowhere.
    pub fn set_problems(&mut self, hook: Arc<NoteFn>) {
        self.queue = Arc::new(NoteQueue::new(THREAD, hook));
        self.info = false;
    }

    /// The client's requests are many callers' from here on (a proxy's:
    /// `proxy::serve_as`): a log message, which names no request, is
    /// given to none (`link::route`), so that no caller reads another's.
    #[cfg(feature = "server")]
    pub fn serve_many_callers(&self) {
        self.many_callers.store(true, Ordering::Release);
    }

    /// Whether the client's requests are many callers'.
    pub fn many_callers(&self) -> bool {
        self.many_callers.load(Ordering::Acquire)
    }

    /// Sends session-wide log messages to `callback`.
    pub fn set_log(&mut self, callback: Arc<LogFn>) {
        self.log = Some(callback);
    }

    /// Something went wrong with the server.
    pub fn problem(&self, text: &str) {
        self.queue.push(text);
    }

    /// Routine information.
    pub fn info(&self, text: &str) {
        if self.info {
            self.queue.push(text);
        }
    }

    /// Waits until the notes queued so far were written, at most `timeout`.
    pub fn flush(&self, timeout: Duration) {
        self.queue.flush(timeout);
    }

    /// Calls the application's `hook` on one of the client's own threads
    /// (the reader, the writer, the stderr thread, an answering thread). A
    /// panic in it is caught and noted as a problem, and the thread goes on
    /// with its work, as the server turns a handler's panic into an error:
    /// a hook that panics must not leave the reader's cleanup undone (every
    /// waiter would hang) or the lines a thread carries unsent. `Err`: it
    /// panicked, with the panic's message.
    pub fn guard<R>(&self, hook: &str, call: impl FnOnce() -> R) -> Result<R, String> {
        catch_unwind(AssertUnwindSafe(call)).map_err(|panic| {
            let what = panic_text(&*panic);
            self.problem(&format!("the {hook} hook panicked ({what}): caught"));
            what
        })
    }

    /// A log message from the server that belongs to no request: to the
    /// client-level callback, else to the trace as information.
    pub fn log(&self, message: &LoggingMessageNotificationParams) {
        match &self.log {
            // On the reader: a panic must not end it.
            Some(callback) => {
                let _ = self.guard("on_log", || callback(message));
            }
            None => self.info(&format!(
                "server log ({:?}{}): {}",
                message.level,
                message
                    .logger
                    .as_deref()
                    .map_or_else(String::new, |logger| format!(", {logger}")),
                message.data
            )),
        }
    }
}

/// A panic's message, when it is a string.
pub(crate) fn panic_text(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string payload".to_owned())
}

impl NoteLimiter {
    /// Notes a problem of the server's output, unless 10 were noted in the
    /// last second.
    pub fn problem(&mut self, notes: &Notes, text: &str) {
        self.note(&|line| notes.problem(line), text);
    }
}

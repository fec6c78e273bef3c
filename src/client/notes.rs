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

use std::sync::Arc;
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
}

/// The note thread's name.
const THREAD: &str = "mcp-client-notes";

impl Default for Notes {
    fn default() -> Notes {
        Notes {
            queue: Arc::new(NoteQueue::stderr(THREAD, "mcp-stdio client: ")),
            info: false,
            log: None,
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

    /// A log message from the server that belongs to no request: to the
    /// client-level callback, else to the trace as information.
    pub fn log(&self, message: &LoggingMessageNotificationParams) {
        match &self.log {
            Some(callback) => callback(message),
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

impl NoteLimiter {
    /// Notes a problem of the server's output, unless 10 were noted in the
    /// last second.
    pub fn problem(&mut self, notes: &Notes, text: &str) {
        self.note(&|line| notes.problem(line), text);
    }
}

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

use std::sync::Arc;

use crate::note_limiter::NoteLimiter;
use crate::types::LoggingMessageNotificationParams;

/// A hook that takes one note.
pub(crate) type NoteFn = dyn Fn(&str) + Send + Sync;

/// The client-level log callback (`ClientBuilder::on_log`).
pub(crate) type LogFn = dyn Fn(&LoggingMessageNotificationParams) + Send + Sync;

/// The client's note hooks and its client-level log callback.
#[derive(Clone)]
pub(crate) struct Notes {
    problem: Arc<NoteFn>,
    info: Arc<NoteFn>,
    log: Option<Arc<LogFn>>,
}

impl Default for Notes {
    fn default() -> Notes {
        Notes {
            problem: Arc::new(|line: &str| eprintln!("mcp-stdio client: {line}")),
            info: Arc::new(|_: &str| {}),
            log: None,
        }
    }
}

impl Notes {
    /// Sends every note, problems and information, to `hook`.
    pub fn set_trace(&mut self, hook: Arc<NoteFn>) {
        self.problem = Arc::clone(&hook);
        self.info = hook;
    }

    /// Sends session-wide log messages to `callback`.
    pub fn set_log(&mut self, callback: Arc<LogFn>) {
        self.log = Some(callback);
    }

    /// Something went wrong with the server.
    pub fn problem(&self, text: &str) {
        (self.problem)(text);
    }

    /// Routine information.
    pub fn info(&self, text: &str) {
        (self.info)(text);
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

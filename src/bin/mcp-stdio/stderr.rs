//! Everything the command line writes on stderr, through one lock: the
//! progress bar, the server's log messages, the wire (`--wire`), the
//! client's notes, questions for the user, and errors.
//!
//! Why one place: these come from several threads at once (the client's
//! reader and writer threads call the wire hook, the waiting thread draws
//! progress, a legacy server's questions are asked on a thread of their
//! own), and a progress bar redrawn in place with `\r` must be wiped before
//! any other line is written, or the two end up on one line.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;

use mcp_stdio::types::{LoggingMessageNotificationParams, ProgressNotificationParams};

/// How wide the bar is, in cells.
const BAR_CELLS: usize = 24;
/// How much of a progress message the bar shows: a line that wraps
/// cannot be redrawn in place.
const BAR_MESSAGE_CHARS: usize = 40;

/// stderr, shared.
#[derive(Debug)]
pub struct Stderr {
    /// Whether the progress bar is on the screen now.
    bar_drawn: Mutex<bool>,
    /// Draw a bar (stderr is a terminal and nothing else streams there),
    /// or write progress as plain lines.
    bar: bool,
    /// Escape control characters (stderr is a terminal, and the bytes
    /// were not asked for: see `escape`).
    escape: bool,
}

impl Stderr {
    /// `plain`: progress as lines even on a terminal (under `--wire`, whose
    /// lines come between two redraws). `escape`: control characters in
    /// what is written are shown escaped (the bar's own are not).
    pub fn new(plain: bool, escape: bool) -> Stderr {
        Stderr {
            bar_drawn: Mutex::new(false),
            bar: !plain && std::io::stderr().is_terminal(),
            escape,
        }
    }

    /// `text` as it may be written here.
    fn shown<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        if self.escape {
            crate::escape::text(text)
        } else {
            std::borrow::Cow::Borrowed(text)
        }
    }

    /// Writes one line (wiping the bar first).
    pub fn line(&self, text: &str) {
        let mut drawn = self.lock();
        let mut err = std::io::stderr().lock();
        if *drawn {
            let _ = err.write_all(b"\r\x1b[2K");
            *drawn = false;
        }
        // A failed write to stderr has nowhere left to be reported.
        let _ = writeln!(err, "{}", self.shown(text));
    }

    /// Writes `text` with no newline after it: a question whose answer is
    /// typed on the same line.
    pub fn ask(&self, text: &str) {
        let mut drawn = self.lock();
        let mut err = std::io::stderr().lock();
        if *drawn {
            let _ = err.write_all(b"\r\x1b[2K");
            *drawn = false;
        }
        let _ = write!(err, "{}", self.shown(text));
        let _ = err.flush();
    }

    /// Wipes the progress bar, if it is drawn.
    pub fn clear(&self) {
        let mut drawn = self.lock();
        if *drawn {
            let _ = std::io::stderr().write_all(b"\r\x1b[2K");
            *drawn = false;
        }
    }

    /// Shows a progress notification: the bar redrawn in place, or a line.
    pub fn progress(&self, p: &ProgressNotificationParams) {
        let count = match p.total {
            Some(total) => format!("{}/{}", number(p.progress), number(total)),
            None => number(p.progress),
        };
        let message = p.message.as_deref().unwrap_or("");
        if !self.bar {
            let text = format!("progress {count} {message}");
            return self.line(text.trim_end());
        }
        let cells = match p.total {
            Some(total) if total > 0.0 => {
                let done = ((p.progress / total).clamp(0.0, 1.0) * BAR_CELLS as f64) as usize;
                format!("{}{}", "#".repeat(done), "-".repeat(BAR_CELLS - done))
            }
            // No total: a marker that moves with each notification.
            _ => {
                let at = (p.progress.max(0.0) as usize) % BAR_CELLS;
                let mut cells = "-".repeat(BAR_CELLS);
                cells.replace_range(at..at + 1, "#");
                cells
            }
        };
        let message: String = crate::escape::line(message)
            .chars()
            .take(BAR_MESSAGE_CHARS)
            .collect();
        let mut drawn = self.lock();
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K[{cells}] {count} {message}");
        let _ = err.flush();
        *drawn = true;
    }

    /// Shows a log message from the server.
    pub fn log(&self, log: &LoggingMessageNotificationParams) {
        let level = serde_json::to_value(log.level)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let data = match &log.data {
            serde_json::Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        match &log.logger {
            Some(logger) => self.line(&format!("log {level} [{logger}]: {data}")),
            None => self.line(&format!("log {level}: {data}")),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, bool> {
        // A panic while writing to stderr leaves nothing to repair.
        self.bar_drawn.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A progress figure: whole numbers without a fraction.
fn number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn numbers_drop_a_zero_fraction() {
        assert_eq!(super::number(3.0), "3");
        assert_eq!(super::number(2.5), "2.5");
    }
}

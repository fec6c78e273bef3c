//! Rate-limits notes a peer can cause, so that bad input cannot flood the
//! log: at most 10 a second by default, and a count of what was left out
//! with the next note that passes.
//!
//! Why it matters beyond noise: a server's notes go to its stderr, and a
//! client may pipe that stream and never read it (the spec lets it ignore
//! stderr). Once the pipe is full, every note blocks the thread that writes
//! it, so an unlimited stream of notes about bad lines would stop the
//! server. Limited, it would take hours of bad input to fill a pipe.

use std::time::{Duration, Instant};

/// Counts notes in windows of a fixed length.
#[derive(Debug)]
pub(crate) struct NoteLimiter {
    /// How many notes pass in one window.
    per_window: u32,
    window_length: Duration,
    window: Option<Instant>,
    in_window: u32,
    suppressed: u64,
}

/// 10 notes a second.
impl Default for NoteLimiter {
    fn default() -> Self {
        NoteLimiter::new(10, Duration::from_secs(1))
    }
}

impl NoteLimiter {
    /// At most `per_window` notes in each `window`: the first at once.
    pub fn new(per_window: u32, window: Duration) -> NoteLimiter {
        NoteLimiter {
            per_window,
            window_length: window,
            window: None,
            in_window: 0,
            suppressed: 0,
        }
    }

    /// Passes `text` to `out`, unless the window's notes passed already.
    pub fn note(&mut self, out: &dyn Fn(&str), text: &str) {
        let now = Instant::now();
        match self.window {
            Some(start) if now.duration_since(start) < self.window_length => {
                if self.in_window >= self.per_window {
                    self.suppressed += 1;
                    return;
                }
                self.in_window += 1;
            }
            _ => {
                if self.suppressed > 0 {
                    out(&format!(
                        "({} more notes of this kind were left out)",
                        self.suppressed
                    ));
                    self.suppressed = 0;
                }
                self.window = Some(now);
                self.in_window = 1;
            }
        }
        out(text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    #[test]
    fn ten_notes_a_second_pass_and_the_rest_are_counted() {
        let seen = RefCell::new(Vec::new());
        let out = |line: &str| seen.borrow_mut().push(line.to_owned());
        let mut limiter = NoteLimiter::default();
        for n in 0..25 {
            limiter.note(&out, &format!("note {n}"));
        }
        assert_eq!(seen.borrow().len(), 10);
        // The next window opens with the count of what was left out.
        limiter.window = limiter.window.map(|at| at - Duration::from_secs(2));
        limiter.note(&out, "later");
        assert_eq!(
            seen.borrow()[10..],
            ["(15 more notes of this kind were left out)", "later"]
        );
    }

    #[test]
    fn one_note_a_minute_passes_the_first_at_once() {
        let seen = RefCell::new(Vec::new());
        let out = |line: &str| seen.borrow_mut().push(line.to_owned());
        let mut limiter = NoteLimiter::new(1, Duration::from_secs(60));
        limiter.note(&out, "first");
        limiter.note(&out, "second");
        assert_eq!(*seen.borrow(), ["first"]);
        limiter.window = limiter.window.map(|at| at - Duration::from_secs(61));
        limiter.note(&out, "a minute on");
        assert_eq!(
            seen.borrow()[1..],
            ["(1 more notes of this kind were left out)", "a minute on"]
        );
    }
}

//! Rate-limits notes a peer can cause, so that bad input cannot flood the
//! log: at most 10 a second, and a count of what was left out with the
//! next note that passes.
//!
//! Why it matters beyond noise: a server's notes go to its stderr, and a
//! client may pipe that stream and never read it (the spec lets it ignore
//! stderr). Once the pipe is full, every note blocks the thread that writes
//! it, so an unlimited stream of notes about bad lines would stop the
//! server. Limited, it would take hours of bad input to fill a pipe.

use std::time::{Duration, Instant};

/// Counts notes in one-second windows.
#[derive(Debug, Default)]
pub(crate) struct NoteLimiter {
    window: Option<Instant>,
    in_window: u32,
    suppressed: u64,
}

impl NoteLimiter {
    /// Passes `text` to `out`, unless 10 notes passed in the last second.
    pub fn note(&mut self, out: &dyn Fn(&str), text: &str) {
        let now = Instant::now();
        match self.window {
            Some(start) if now.duration_since(start) < Duration::from_secs(1) => {
                if self.in_window >= 10 {
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
}

//! Text from the server, made safe to show: its control characters (ESC,
//! BEL, CR, the C1 controls, ...) and the bidirectional overrides written
//! out as Rust's `escape_debug` writes them (`\u{1b}`, `\r`, `\u{202e}`).
//!
//! Why: a server is a program someone else wrote, and what it sends is
//! printed. On a terminal an escape sequence in a tool's result or name is
//! not text but a command to the terminal: OSC 0 sets the window's title,
//! OSC 52 writes the clipboard, others move the cursor over what was
//! printed before. So on a terminal every control character from the
//! server is shown escaped, unless `--raw` or `--json` asks for the bytes
//! (a script that reads our output gets them as they came: escaping is
//! for terminals).
//!
//! Two things are escaped wherever they go, terminal or not: a value
//! printed one a line (a name, a URI, a completion), whose newline would
//! make two items of one, and the error line, which is one line of text.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether what `output::print` writes is escaped (stdout is a terminal,
/// and neither `--raw` nor `--json` was given). Set once, by `main`.
static STDOUT: AtomicBool = AtomicBool::new(false);

/// Escape what `output::print` writes from now on, or not.
pub fn set_stdout(escape: bool) {
    STDOUT.store(escape, Ordering::Relaxed);
}

/// Whether stdout is escaped.
pub fn stdout() -> bool {
    STDOUT.load(Ordering::Relaxed)
}

/// `text` for a terminal: its lines as they are (a `\n`, a `\r\n`, a tab),
/// every other control character escaped.
pub fn text(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

/// `text` on one line: every control character escaped, newlines and tabs
/// included.
pub fn line(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

fn escape(text: &str, keep_lines: bool) -> Cow<'_, str> {
    let mut chars = text.chars().peekable();
    let mut out: Option<String> = None;
    let mut at = 0;
    while let Some(c) = chars.next() {
        let kept = match c {
            '\n' | '\t' => keep_lines,
            // A line ended the Windows way is a line ending, not a return
            // over what was written.
            '\r' => keep_lines && chars.peek() == Some(&'\n'),
            c => !c.is_control() && !is_bidi_control(c),
        };
        match (&mut out, kept) {
            (Some(out), true) => out.push(c),
            (Some(out), false) => out.extend(c.escape_debug()),
            (None, true) => {}
            (None, false) => {
                let mut escaped = String::with_capacity(text.len() + 16);
                escaped.push_str(&text[..at]);
                escaped.extend(c.escape_debug());
                out = Some(escaped);
            }
        }
        at += c.len_utf8();
    }
    out.map_or(Cow::Borrowed(text), Cow::Owned)
}

/// The characters that reorder what follows them (the "Trojan Source"
/// characters): shown, they make text read otherwise than it is.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(
            text("a\x1b]0;t\x07b\r\nc\rd\te\u{9b}f\u{202e}g\n"),
            "a\\u{1b}]0;t\\u{7}b\r\nc\\rd\te\\u{9b}f\\u{202e}g\n"
        );
        assert_eq!(line("two\nlines\t!"), "two\\nlines\\t!");
        assert!(matches!(text("plain é ✓\n"), Cow::Borrowed(_)));
        assert!(matches!(line("plain"), Cow::Borrowed(_)));
    }
}

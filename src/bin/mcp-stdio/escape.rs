//! Text from the server, made safe to show: its control characters (ESC,
//! BEL, CR, the C1 controls, ...) and the bidirectional overrides written
//! out as Rust's `escape_debug` writes them (`\u{1b}`, `\r`, `\u{202e}`).
//!
//! Why: a server is a program someone else wrote, and what it sends is
//! printed. On a terminal an escape sequence in a tool's result or name is
//! not text but a command to the terminal: OSC 0 sets the window's title,
//! OSC 52 writes the clipboard, others move the cursor over what was
//! printed before. So on a terminal every control character from the
//! server is shown escaped: as `escape_debug` writes it ([`Mode::Text`]),
//! or with `--json` as JSON writes it, `\u009d` ([`Mode::Json`]: the same
//! JSON value, since JSON's own escaping leaves U+007F..U+009F and the bidi
//! characters as they are). Where the output is not a terminal, and on
//! stdout under `--raw`, the bytes go as they came ([`Mode::Exact`]): a
//! script that reads them gets them as the server sent them. `--raw` is
//! about stdout only: stderr (the server's stderr, logs, the wire,
//! questions) is escaped on a terminal whatever was asked.
//!
//! Two things are escaped wherever they go, terminal or not: a value
//! printed one a line (a name, a URI, a completion, the first line of a
//! description), whose line break (`\n`, a lone `\r`, U+2028, U+2029, or
//! the C0 and C1 separators Python's `str.splitlines` splits at) would make
//! two items of one, and the error line, which is one line of text. A
//! note of the command line's own or of the client's (`Stderr::note`,
//! `Stderr::client_note`) is text too, whatever of the server's it quotes
//! (an error message, a method name): its control characters are escaped
//! wherever it goes, its lines kept ([`text`]), as the library's own
//! stderr hook escapes the client's notes.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU8, Ordering};

/// How text from the server is written to one of our streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// As it came: not a terminal, or stdout under `--raw`.
    Exact,
    /// A terminal: control characters as `escape_debug` writes them.
    Text,
    /// A terminal under `--json`: what JSON's escaping leaves raw and a
    /// terminal takes for a command, as `\uXXXX`.
    Json,
}

impl Mode {
    /// The mode of a stream: `terminal` or not, under `--json` or not;
    /// `raw` (`--raw`, for stdout only) keeps a terminal's text exact,
    /// JSON's too.
    pub fn of(terminal: bool, json: bool, raw: bool) -> Mode {
        match (terminal, json, raw) {
            (false, _, _) | (true, _, true) => Mode::Exact,
            (true, true, false) => Mode::Json,
            (true, false, false) => Mode::Text,
        }
    }

    /// `text` as it may be written in this mode.
    pub fn shown(self, text: &str) -> Cow<'_, str> {
        match self {
            Mode::Exact => Cow::Borrowed(text),
            Mode::Text => crate::escape::text(text),
            Mode::Json => json(text),
        }
    }
}

/// How `output::print` writes (`Mode::Exact`, `Text` or `Json`, as a
/// number). Set once, by `main`.
static STDOUT: AtomicU8 = AtomicU8::new(0);

/// The mode of what `output::print` writes from now on.
pub fn set_stdout(mode: Mode) {
    STDOUT.store(mode as u8, Ordering::Relaxed);
}

/// The mode of stdout.
pub fn stdout() -> Mode {
    match STDOUT.load(Ordering::Relaxed) {
        1 => Mode::Text,
        2 => Mode::Json,
        _ => Mode::Exact,
    }
}

/// `text` for a terminal: its lines as they are (a `\n`, a `\r\n`, a tab),
/// every other control character escaped.
pub fn text(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

/// `text` on one line: every control character escaped, newlines and tabs
/// included, and the two line breaks that are not controls (U+2028 LINE
/// SEPARATOR, U+2029 PARAGRAPH SEPARATOR).
pub fn line(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// JSON text for a terminal: the characters JSON's escaping leaves as they
/// are but a terminal obeys (DEL and the C1 controls, U+007F..U+009F) or
/// reorders by (the bidi controls), and the line separators U+2028 and
/// U+2029, written `\uXXXX`. They can stand only inside a JSON string,
/// where `\uXXXX` is the same character: the value is unchanged.
pub fn json(text: &str) -> Cow<'_, str> {
    let escaped = left_by_json;
    if !text.contains(escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if escaped(c) {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// What `json` escapes: the characters JSON's escaping leaves as they are
/// but a terminal obeys or reorders by (any other format that leaves them
/// raw, XML, escapes these too, its own way).
pub fn left_by_json(c: char) -> bool {
    matches!(c, '\u{7f}'..='\u{9f}' | '\u{2028}' | '\u{2029}') || is_bidi_control(c)
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
            '\u{2028}' | '\u{2029}' => keep_lines,
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
        assert_eq!(line("a\u{2028}b\rc\u{85}d"), "a\\u{2028}b\\rc\\u{85}d");
        assert!(matches!(text("plain é ✓\n"), Cow::Borrowed(_)));
        assert!(matches!(line("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn json_for_a_terminal_keeps_its_value() {
        let text = "{\"t\":\"\u{9d}0;x\u{9c} \u{202e}é\u{2028}\"}";
        let shown = json(text);
        assert_eq!(shown, r#"{"t":"\u009d0;x\u009c \u202eé\u2028"}"#);
        let a: serde_json::Value = serde_json::from_str(text).unwrap();
        let b: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(a, b);
        assert!(matches!(json(r#"{"a":"é ✓"}"#), Cow::Borrowed(_)));
    }
}

//! Reads the top-level members of a message too long to keep: its `id`,
//! and whether it has `method`, `result` or `error`, from a stream of
//! chunks, without holding the line.
//!
//! Why: a line over the maximum length is thrown away in pieces (see
//! `transport`), but whoever sent it still waits for an answer. An error
//! response must carry the request's id unless it could not be read (spec
//! 2026-07-28 basic/index, "Error Responses"), and a client must know which
//! of its requests a too-large response answers. Peers put `id` anywhere:
//! the TypeScript SDK writes `{"result":{...},"jsonrpc":"2.0","id":5}`, so
//! the id can be the last bytes of a 100 MiB line.
//!
//! So the scan follows just enough of the JSON grammar to know where it is:
//! inside a string or not (with escapes, across chunk boundaries), and how
//! deep. It keeps only the text of the top-level key being read (a few
//! bytes) and of the `id` value (at most [`ID_LIMIT`] bytes), and inside
//! strings, which are most of any large message, it jumps from one quote or
//! backslash to the next with `memchr`. Nothing is reported unless the line
//! is one object that closes exactly once: a truncated or broken line has
//! no id anyone could trust.

use crate::jsonrpc::RequestId;

/// The longest `id` value (as JSON text) the scan keeps; a longer one counts
/// as unreadable.
pub(crate) const ID_LIMIT: usize = 1024;

/// The longest top-level key (as JSON text, quotes and escapes included)
/// the scan reads; a longer one is none of the members it looks for.
const KEY_LIMIT: usize = 32;

/// What the scan of a whole line found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Envelope {
    /// The top-level `id`, when there was exactly one and it is a string or
    /// an integer.
    pub id: Option<RequestId>,
    /// A top-level `id` member is present, readable or not.
    pub has_id: bool,
    /// A top-level `method` member is present.
    pub has_method: bool,
    /// A top-level `result` or `error` member is present.
    pub has_outcome: bool,
}

impl Envelope {
    /// Whether the message is a response (a result or an error, no method).
    pub fn is_response(&self) -> bool {
        self.has_outcome && !self.has_method
    }

    /// Whether the message is a notification (a method and no id at all).
    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    pub fn is_notification(&self) -> bool {
        self.has_method && !self.has_id
    }
}

/// Where the scan is in the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Before the first byte that is not whitespace (or a byte order mark).
    Start,
    /// Inside the top-level object.
    Object,
    /// The top-level object closed; only whitespace may follow.
    Closed,
    /// Not one JSON object: nothing will be reported.
    Broken,
}

/// The top-level member whose value is being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Member {
    Id,
    Other,
}

/// The streaming scan: [`feed`](EnvelopeScan::feed) it every chunk of the
/// line in order, then [`finish`](EnvelopeScan::finish).
#[derive(Debug)]
pub(crate) struct EnvelopeScan {
    phase: Phase,
    /// How many bytes of a leading UTF-8 byte order mark were seen.
    bom: usize,
    /// Nesting depth: 1 inside the top-level object.
    depth: usize,
    in_string: bool,
    /// The previous byte was a backslash inside a string.
    escaped: bool,
    /// At depth 1: the next string is a key.
    expect_key: bool,
    /// The string being read is a top-level key.
    in_key: bool,
    key: Vec<u8>,
    /// The member whose value follows the current key.
    member: Member,
    /// Inside the value of `id`: its bytes are kept.
    capturing: bool,
    value: Vec<u8>,
    value_too_long: bool,
    ids_seen: u32,
    found: Envelope,
}

const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

impl EnvelopeScan {
    pub fn new() -> EnvelopeScan {
        EnvelopeScan {
            phase: Phase::Start,
            bom: 0,
            depth: 0,
            in_string: false,
            escaped: false,
            expect_key: false,
            in_key: false,
            key: Vec::new(),
            member: Member::Other,
            capturing: false,
            value: Vec::new(),
            value_too_long: false,
            ids_seen: 0,
            found: Envelope::default(),
        }
    }

    /// Scans the next chunk of the line.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        while let Some((&b, rest)) = bytes.split_first() {
            match self.phase {
                Phase::Broken => return,
                Phase::Start => {
                    bytes = rest;
                    self.before_object(b);
                }
                Phase::Object => bytes = self.object(bytes),
                Phase::Closed => {
                    self.after_object(bytes);
                    return;
                }
            }
        }
    }

    /// What the whole line held; nothing unless it was one object.
    pub fn finish(self) -> Envelope {
        match self.phase {
            Phase::Closed => self.found,
            _ => Envelope::default(),
        }
    }

    /// Reads one byte before the object: a byte order mark, whitespace, or
    /// the opening brace; anything else breaks the line.
    fn before_object(&mut self, b: u8) {
        if self.bom < BOM.len() && b == BOM[self.bom] {
            self.bom += 1;
        } else if b == b'{' {
            self.phase = Phase::Object;
            self.depth = 1;
            self.expect_key = true;
        } else if !is_json_whitespace(b) {
            self.phase = Phase::Broken;
        }
    }

    /// Reads bytes after the object closed: only whitespace may follow.
    fn after_object(&mut self, bytes: &[u8]) {
        if !bytes.iter().copied().all(is_json_whitespace) {
            self.phase = Phase::Broken;
        }
    }

    /// Scans bytes inside the top-level object; returns what follows its
    /// closing brace (or nothing).
    fn object<'b>(&mut self, bytes: &'b [u8]) -> &'b [u8] {
        let mut i = 0;
        while i < bytes.len() && self.phase == Phase::Object {
            i += if self.in_string {
                self.string(&bytes[i..])
            } else {
                self.outside_string(&bytes[i..])
            };
        }
        &bytes[i..]
    }

    /// Reads string bytes from the start of `rest`, up to and including the
    /// closing quote; returns how many it read (all of them when the string
    /// goes on past the chunk).
    fn string(&mut self, rest: &[u8]) -> usize {
        if self.escaped {
            self.escaped = false;
            self.keep(&rest[..1]);
            return 1;
        }
        let Some(at) = find_quote_or_backslash(rest) else {
            self.keep(rest);
            return rest.len();
        };
        if rest[at] == b'\\' {
            // The escaped byte goes with its backslash, when the chunk has
            // it.
            if at + 1 < rest.len() {
                self.keep(&rest[..at + 2]);
                return at + 2;
            }
            self.keep(rest);
            self.escaped = true;
            return rest.len();
        }
        self.keep(&rest[..=at]);
        self.end_string();
        at + 1
    }

    /// Reads bytes outside strings from the start of `rest`: one byte that
    /// changes what the scan is reading, or a run of bytes that change
    /// nothing; returns how many it read (all of them when the line broke).
    fn outside_string(&mut self, rest: &[u8]) -> usize {
        let b = rest[0];
        match b {
            b'"' => self.start_string(),
            b'{' | b'[' => {
                self.depth += 1;
                self.keep(&[b]);
            }
            b']' if self.depth == 1 => {
                self.phase = Phase::Broken;
                return rest.len();
            }
            b'}' if self.depth == 1 => self.close_object(),
            b'}' | b']' => {
                self.depth -= 1;
                self.keep(&[b]);
            }
            b',' if self.depth == 1 => {
                self.end_value();
                self.expect_key = true;
            }
            b':' if self.depth == 1 => self.start_value(),
            _ if self.capturing => self.keep(&[b]),
            // Numbers, literals, whitespace, and separators below the top
            // level: skip to the next byte that can matter.
            _ => {
                return 1 + rest[1..]
                    .iter()
                    .position(|&c| STRUCTURAL[usize::from(c)])
                    .unwrap_or(rest.len() - 1);
            }
        }
        1
    }

    /// An opening quote: a string starts, and at the top level where a key
    /// is expected, it is a key.
    fn start_string(&mut self) {
        self.in_string = true;
        if self.depth == 1 && self.expect_key {
            self.expect_key = false;
            self.in_key = true;
            self.key.clear();
        }
        self.keep(b"\"");
    }

    /// A closing quote: the string ended, and with it the key if it was one.
    fn end_string(&mut self) {
        self.in_string = false;
        if self.in_key {
            self.in_key = false;
            self.end_key();
        }
    }

    /// A colon at the top level: the value of the member starts, and the
    /// value of `id` is kept.
    fn start_value(&mut self) {
        if self.member == Member::Id {
            self.capturing = true;
            self.value.clear();
            self.value_too_long = false;
        }
    }

    /// The closing brace of the top-level object: the last value ended.
    fn close_object(&mut self) {
        self.end_value();
        self.depth = 0;
        self.phase = Phase::Closed;
    }

    /// Keeps bytes of the key or of the id value being read.
    fn keep(&mut self, bytes: &[u8]) {
        if self.in_key {
            if self.key.len() + bytes.len() <= KEY_LIMIT {
                self.key.extend_from_slice(bytes);
            } else {
                // Longer than any member looked for: make it unreadable.
                self.key.clear();
                self.key.push(0);
            }
        } else if self.capturing && !self.value_too_long {
            if self.value.len() + bytes.len() <= ID_LIMIT {
                self.value.extend_from_slice(bytes);
            } else {
                self.value_too_long = true;
                self.value = Vec::new();
            }
        }
    }

    /// A top-level key was read: which member is it? Keys are compared as
    /// strings, escapes decoded (`"\u0069d"` is `"id"`).
    fn end_key(&mut self) {
        // Through `from_str`, as the server's other reads: one serde_json
        // reader compiled, not two (bytes that are not UTF-8 are refused
        // either way).
        let key: Option<String> = std::str::from_utf8(&self.key)
            .ok()
            .and_then(|key| serde_json::from_str(key).ok());
        self.member = Member::Other;
        match key.as_deref() {
            Some("id") => {
                self.member = Member::Id;
                self.ids_seen += 1;
                self.found.has_id = true;
            }
            Some("method") => self.found.has_method = true,
            Some("result" | "error") => self.found.has_outcome = true,
            _ => {}
        }
    }

    /// The value of a top-level member ended.
    fn end_value(&mut self) {
        if self.capturing {
            self.capturing = false;
            // Two ids are a malformed message: neither can be trusted.
            self.found.id = match (self.ids_seen, self.value_too_long) {
                (1, false) => std::str::from_utf8(&self.value)
                    .ok()
                    .and_then(RequestId::from_json),
                _ => None,
            };
        }
        self.member = Member::Other;
    }
}

/// The bytes outside strings that change what the scan is reading.
const STRUCTURAL: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    while i < 7 {
        table[b"\"{}[],:"[i] as usize] = true;
        i += 1;
    }
    table
};

/// The next `"` or `\` in a string. Escapes come close together in text
/// that is itself JSON (`{\"a\":1}`), where a few bytes by hand beat a
/// `memchr` call per escape; long runs go to `memchr`.
fn find_quote_or_backslash(bytes: &[u8]) -> Option<usize> {
    let near = bytes.len().min(16);
    match bytes[..near].iter().position(|&b| b == b'"' || b == b'\\') {
        Some(at) => Some(at),
        None => memchr::memchr2(b'"', b'\\', &bytes[near..]).map(|at| near + at),
    }
}

/// RFC 8259 section 2: the only whitespace JSON allows.
pub(crate) fn is_json_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

#[cfg(test)]
// Named by its path: `examples/scan_cost.rs` compiles this file in with
// `#[path]`, where a plain `mod tests;` would be looked for beside it.
#[path = "envelope_scan/tests.rs"]
mod tests;

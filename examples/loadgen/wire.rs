//! The messages: `tools/call echo` requests with modern per-request `_meta`,
//! and the check of every reply (its id, and its text down to the byte).
//!
//! The text of call `id` is `id` as ten decimal digits followed by a fixed
//! pattern up to the payload size, so a reply carrying another call's text
//! (or a truncated, padded or altered one) is caught, not only a wrong id.

use std::borrow::Cow;
use std::io::{self, Write};

use serde::Deserialize;
use serde_json::Value;

/// The per-request `_meta` every modern request carries.
const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

/// Digits of the id at the start of every text.
const ID_DIGITS: usize = 10;

/// The repeated filler after the id.
const PATTERN: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_";

/// A `server/discover` request line (with its newline).
pub fn discover_request(id: u64) -> String {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"server/discover\",\"params\":{{\"_meta\":{META}}}}}\n"
    )
}

/// Checks that `line` is a successful reply to the discover request `id`.
pub fn check_discover(line: &[u8], id: u64) -> Result<(), String> {
    let reply: Value = serde_json::from_slice(line)
        .map_err(|e| format!("discover reply is not JSON ({e}): {}", excerpt(line)))?;
    if reply["id"] != id || !reply["result"].is_object() {
        return Err(format!(
            "not a result for server/discover {id}: {}",
            excerpt(line)
        ));
    }
    Ok(())
}

/// The echo text of one payload size.
pub struct Payload {
    /// The text of call 0; call `id` replaces the first digits.
    text: Vec<u8>,
}

/// What a line from the server turned out to be.
#[derive(Debug, PartialEq, Eq)]
pub enum Reply {
    /// A correct echo reply to the call with this id.
    Echo(u64),
    /// A notification (no id): not a reply, skipped.
    Notification,
}

impl Payload {
    /// The smallest size: the id's digits.
    pub const MIN_SIZE: usize = ID_DIGITS;

    /// A payload of `size` bytes of text (at least [`Payload::MIN_SIZE`]).
    pub fn new(size: usize) -> Payload {
        let size = size.max(Self::MIN_SIZE);
        let mut text = vec![b'0'; ID_DIGITS];
        text.extend(PATTERN.iter().cycle().take(size - ID_DIGITS));
        Payload { text }
    }

    pub fn size(&self) -> usize {
        self.text.len()
    }

    /// Writes the `tools/call echo` request `id` (one line) into `out`.
    pub fn write_call(&self, out: &mut impl Write, id: u64) -> io::Result<()> {
        write!(
            out,
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"_meta\":{META},\"name\":\"echo\",\"arguments\":{{\"text\":\""
        )?;
        out.write_all(&digits(id))?;
        out.write_all(&self.text[ID_DIGITS..])?;
        out.write_all(b"\"}}}\n")
    }

    /// Parses one line from the server and checks it: a reply must be a
    /// result with exactly one text block whose text is exactly the text of
    /// the call its id names. Anything else is an error.
    pub fn check(&self, line: &[u8]) -> Result<Reply, String> {
        check(line, |_| self)
    }

    fn is_text_of(&self, id: u64, text: &[u8]) -> bool {
        text.len() == self.text.len()
            && text[..ID_DIGITS] == digits(id)
            && text[ID_DIGITS..] == self.text[ID_DIGITS..]
    }
}

/// [`Payload::check`] for calls of different payloads: `payload_of` says
/// which payload call `id` carried.
pub fn check<'p>(line: &[u8], payload_of: impl Fn(u64) -> &'p Payload) -> Result<Reply, String> {
    #[derive(Deserialize)]
    struct Message<'a> {
        #[serde(default)]
        id: Option<Value>,
        #[serde(default)]
        method: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        result: Option<CallResult<'a>>,
        #[serde(default)]
        error: Option<Value>,
    }
    #[derive(Deserialize)]
    struct CallResult<'a> {
        #[serde(borrow)]
        content: Vec<Content<'a>>,
        #[serde(default, rename = "isError")]
        is_error: bool,
    }
    #[derive(Deserialize)]
    struct Content<'a> {
        #[serde(rename = "type")]
        kind: Cow<'a, str>,
        #[serde(borrow)]
        text: Cow<'a, str>,
    }

    let message: Message = serde_json::from_slice(line)
        .map_err(|e| format!("not an echo reply ({e}): {}", excerpt(line)))?;
    let id = match (&message.id, &message.method) {
        (None, Some(_)) => return Ok(Reply::Notification),
        (Some(id), None) => id.as_u64(),
        _ => None,
    };
    let Some(id) = id else {
        return Err(format!("not a reply to a call: {}", excerpt(line)));
    };
    if let Some(error) = message.error {
        return Err(format!("call {id} failed: {error}"));
    }
    let Some(result) = message.result else {
        return Err(format!("reply {id} has no result: {}", excerpt(line)));
    };
    if result.is_error {
        return Err(format!(
            "call {id} reported a tool error: {}",
            excerpt(line)
        ));
    }
    match result.content.as_slice() {
        [block] if block.kind == "text" && payload_of(id).is_text_of(id, block.text.as_bytes()) => {
            Ok(Reply::Echo(id))
        }
        _ => Err(format!(
            "reply {id} does not carry the text of call {id}: {}",
            excerpt(line)
        )),
    }
}

/// `id` as exactly ten decimal digits (ids stay far below 10^10).
fn digits(mut id: u64) -> [u8; ID_DIGITS] {
    let mut out = [b'0'; ID_DIGITS];
    for digit in out.iter_mut().rev() {
        *digit = b'0' + (id % 10) as u8;
        id /= 10;
    }
    out
}

/// The start of a line, for error messages (lines can be a megabyte).
fn excerpt(line: &[u8]) -> String {
    const MAX: usize = 300;
    let text = String::from_utf8_lossy(&line[..line.len().min(MAX)]).into_owned();
    if line.len() > MAX {
        format!("{text}... ({} bytes)", line.len())
    } else {
        text
    }
}

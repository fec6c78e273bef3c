//! Multi round-trip requests on the server (spec 2026-07-28
//! basic/patterns/mrtr): sealing `requestState`, checking it on the retry,
//! and checking `inputResponses` before the handler sees them.
//!
//! Why sealed: `requestState` goes to the client and comes back as
//! attacker-controlled input. The server therefore never trusts it: what
//! the handler hands over is wrapped with an expiry, the method, a digest
//! of the request's salient parameters and the kinds of input requests
//! asked, and the whole is signed with HMAC-SHA256 under a key the client
//! never sees. On the retry everything is checked before the handler runs;
//! a tampered, expired or transplanted state is `-32602`.
//!
//! The sealed format, all ASCII:
//! `v1.<base64url(payload JSON)>.<base64url(HMAC-SHA256(key, "v1." + payload))>`
//! where the payload is `{"m": method, "d": digest, "e": expiry (Unix ms),
//! "k": {key: input kind}, "s": the handler's state, "o": the principal}`;
//! `"o"` (whom the request's token stands for, `s:` subject or `c:` client
//! id) is absent without one, and a retry must come from the same principal
//! (spec 2026-07-28 basic/patterns/mrtr, Server Requirements 5).

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::jsonrpc::ErrorObject;
use crate::server::request_meta::{Owner, RequestMeta, TokenInfo};
use crate::types::{
    InputRequest, InputRequests, InputRequiredResult, InputResponse, InputResponses,
};

type HmacSha256 = Hmac<Sha256>;

/// The kind of an input request, which decides the shape of its response
/// and the client capability it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum InputKind {
    #[serde(rename = "e")]
    Elicit,
    #[serde(rename = "s")]
    Sampling,
    #[serde(rename = "r")]
    Roots,
}

impl InputKind {
    pub(crate) fn of(request: &InputRequest) -> Option<InputKind> {
        match request {
            InputRequest::Elicit(_) => Some(InputKind::Elicit),
            InputRequest::CreateMessage(_) => Some(InputKind::Sampling),
            InputRequest::ListRoots(_) => Some(InputKind::Roots),
            _ => None,
        }
    }

    /// Whether `response` has the shape of this kind's result.
    pub(crate) fn accepts(self, response: &InputResponse) -> bool {
        match self {
            InputKind::Elicit => response.to_elicit_result().is_ok(),
            InputKind::Sampling => response.to_create_message_result().is_ok(),
            InputKind::Roots => response.to_list_roots_result().is_ok(),
        }
    }
}

/// What the key the application configured (`request_state_key`) is
/// derived into for sealing request states.
pub(crate) const SEAL_KEY: &str = "mcp-stdio requestState seal";

/// What it is derived into for authenticating the change feed.
pub(crate) const FEED_KEY: &str = "mcp-stdio change feed";

/// The key for one `purpose` (one of the two above), derived from the one
/// the application configured: HMAC-SHA256 of the purpose under it. Each
/// purpose has a key of its own, so that a MAC made for one (a message on
/// the change feed, which a client of the bus may read) is worth nothing
/// for the other (a sealed `requestState`).
pub(crate) fn derive_key(key: &[u8; 32], purpose: &str) -> [u8; 32] {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(purpose.as_bytes());
    mac.finalize().into_bytes().into()
}

/// The sealing key and lifetime of request states.
pub(crate) struct Sealer {
    key: [u8; 32],
    ttl: Duration,
}

#[derive(Serialize, Deserialize)]
struct Payload {
    m: String,
    d: String,
    e: u64,
    #[serde(default)]
    k: BTreeMap<String, InputKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    s: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    o: Option<String>,
}

/// Whom a request's token stands for, as sealed: `s:` and its subject,
/// `c:` and its client id (two namespaces, as [`Owner`] keeps them), each
/// after its issuer's length, `:` and the issuer when the validator said
/// it (`12:https://a.exs:alice`; the length keeps an issuer from running
/// into the name); `None` without a token or with one that names nobody.
/// Without an issuer the form is the one before issuers, so a state
/// sealed before an upgrade still opens after it.
fn principal(meta: &RequestMeta) -> Option<String> {
    let (issuer, kind, name) = match meta.token_info().and_then(TokenInfo::owner)? {
        Owner::Subject { issuer, subject } => (issuer, "s", subject),
        Owner::Client { issuer, client_id } => (issuer, "c", client_id),
    };
    Some(match issuer {
        None => format!("{kind}:{name}"),
        Some(issuer) => format!("{}:{issuer}{kind}:{name}", issuer.len()),
    })
}

/// A verified retry: what the handler sealed, and the kinds it asked for.
#[derive(Debug, Clone, Default)]
pub(crate) struct Retry {
    pub state: Option<String>,
    pub responses: InputResponses,
}

impl Sealer {
    /// A sealer with `key`, or with a random key from the operating system.
    pub fn new(key: Option<[u8; 32]>, ttl: Duration) -> Sealer {
        let key = key.unwrap_or_else(|| {
            let mut key = [0u8; 32];
            if getrandom::fill(&mut key).is_err() {
                // No OS randomness (practically never): fall back to the
                // process's random hash seeds, which std draws from the OS.
                use std::hash::{BuildHasher, RandomState};
                for (i, chunk) in key.chunks_mut(8).enumerate() {
                    let seed = RandomState::new().hash_one(i).to_le_bytes();
                    chunk.copy_from_slice(&seed[..chunk.len()]);
                }
            }
            key
        });
        Sealer { key, ttl }
    }

    /// Seals the handler's state into the result's `requestState`, after
    /// checking that the request declared every capability the input
    /// requests need (spec 2026-07-28 basic/patterns/mrtr: never ask for
    /// what the client did not declare).
    pub fn seal(
        &self,
        result: &mut InputRequiredResult,
        method: &str,
        digest: &str,
        meta: &RequestMeta,
    ) -> Result<(), ErrorObject> {
        let requests = result.input_requests.iter().flatten();
        let mut kinds = BTreeMap::new();
        for (key, request) in requests {
            if let Some(kind) = InputKind::of(request) {
                kinds.insert(key.clone(), kind);
            }
        }
        if let Some(requests) = &result.input_requests {
            undeclared(requests, meta)?;
        }
        let ttl = u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX);
        let expires = now_ms().saturating_add(ttl);
        let payload = Payload {
            m: method.to_owned(),
            d: digest.to_owned(),
            e: expires,
            k: kinds,
            s: result.request_state.take(),
            o: principal(meta),
        };
        let json = serde_json::to_vec(&payload).map_err(ErrorObject::internal_error)?;
        let mut sealed = String::from("v1.");
        base64url_encode(&json, &mut sealed);
        let mac = self.mac(sealed.as_bytes());
        sealed.push('.');
        base64url_encode(&mac, &mut sealed);
        result.request_state = Some(sealed);
        Ok(())
    }

    /// Checks a retry: the sealed state (if any) must be intact, unexpired
    /// and made for this method, these parameters and the principal of
    /// `meta` (whom its token stands for); every input response
    /// to a request the state names must have that request's shape.
    /// Unknown keys are ignored.
    pub fn open(
        &self,
        state: Option<&str>,
        responses: Option<&str>,
        method: &str,
        digest: impl FnOnce() -> String,
        meta: &RequestMeta,
    ) -> Result<Retry, ErrorObject> {
        let mut kinds = None;
        let mut handler_state = None;
        if let Some(sealed) = state {
            let payload = self.verify(sealed)?;
            if payload.e <= now_ms() {
                return Err(ErrorObject::invalid_params(
                    "requestState has expired: start the request again",
                ));
            }
            if payload.m != method || payload.d != digest() {
                return Err(ErrorObject::invalid_params(
                    "requestState belongs to a different request (method, tool, prompt, resource or arguments differ)",
                ));
            }
            if payload.o != principal(meta) {
                return Err(ErrorObject::invalid_params(
                    "requestState was issued to another user or client: start the request again with your own",
                ));
            }
            kinds = Some(payload.k);
            handler_state = payload.s;
        }
        let responses: InputResponses = match responses {
            None => InputResponses::new(),
            Some(text) if text.starts_with('{') => serde_json::from_str(text)
                .map_err(|e| ErrorObject::invalid_params(format!("invalid inputResponses: {e}")))?,
            Some(text) => {
                return Err(ErrorObject::invalid_params(format!(
                    "inputResponses must be an object, got {}",
                    text.chars().take(40).collect::<String>()
                )));
            }
        };
        // With a state, the kinds asked are known and each answer must fit
        // its request; keys that were not asked are ignored. Without one,
        // nothing says what a key was for: the handler's typed accessors
        // (`ctx.elicitation(key)` and friends) read what fits and it asks
        // again for the rest.
        for (key, response) in &responses {
            let fits = match kinds.as_ref().and_then(|k| k.get(key)) {
                Some(kind) => kind.accepts(response),
                None => true,
            };
            if !fits {
                return Err(ErrorObject::invalid_params(format!(
                    "inputResponses[{key:?}] does not answer the input request it names"
                )));
            }
        }
        Ok(Retry {
            state: handler_state,
            responses,
        })
    }

    fn verify(&self, sealed: &str) -> Result<Payload, ErrorObject> {
        let tampered =
            || ErrorObject::invalid_params("requestState is invalid or was tampered with");
        let (signed, mac) = sealed.rsplit_once('.').ok_or_else(tampered)?;
        let body = signed.strip_prefix("v1.").ok_or_else(tampered)?;
        let mac = base64url_decode(mac).ok_or_else(tampered)?;
        let mut check = HmacSha256::new_from_slice(&self.key).map_err(|_| tampered())?;
        check.update(signed.as_bytes());
        // Constant-time comparison, by the hmac crate.
        check.verify_slice(&mac).map_err(|_| tampered())?;
        let json = base64url_decode(body).ok_or_else(tampered)?;
        // `from_str`, not `from_slice`: one serde_json reader in the binary.
        let json = std::str::from_utf8(&json).map_err(|_| tampered())?;
        serde_json::from_str(json).map_err(|_| tampered())
    }

    fn mac(&self, data: &[u8]) -> Vec<u8> {
        // HMAC accepts keys of any length; 32 bytes cannot fail.
        let mut mac = match HmacSha256::new_from_slice(&self.key) {
            Ok(mac) => mac,
            Err(_) => return Vec::new(),
        };
        mac.update(data);
        mac.finalize().into_bytes().to_vec()
    }
}

/// The digest of a request's salient parameters: what a retry must repeat.
pub(crate) fn digest(parts: &[&str]) -> String {
    let mut hash = Sha256::new();
    for part in parts {
        hash.update((part.len() as u64).to_le_bytes());
        hash.update(part.as_bytes());
    }
    let mut out = String::new();
    base64url_encode(&hash.finalize(), &mut out);
    out
}

/// Canonical JSON of an arguments object, so that a retry with the same
/// arguments in another order still matches: the keys of every object
/// sorted (of a repeated key the last kept, as a `Value` keeps it),
/// strings re-encoded, whitespace dropped, and every number as its text,
/// exactly. Not through a `Value`: it holds an integer beyond 64 bits as
/// the nearest `f64`, while a typed handler reads its arguments from their
/// text (a `u128`), so 2^64 and 2^64 + 1 must digest apart. Text that is
/// not JSON (or nests deeper than serde_json reads) digests as it is.
pub(crate) fn canonical(json: Option<&str>) -> String {
    let Some(text) = json else {
        return "{}".to_owned();
    };
    // Valid JSON within serde_json's nesting limit: what the walk assumes,
    // and what bounds its recursion.
    if serde_json::from_str::<Value>(text).is_err() {
        return text.to_owned();
    }
    let mut walk = Walk { text, at: 0 };
    let mut out = String::with_capacity(text.len());
    walk.node().write(&mut out);
    out
}

/// A JSON value read by [`canonical`]: its objects' members sorted, its
/// scalars as text (strings re-encoded, numbers and literals as written).
enum Node {
    Scalar(String),
    Array(Vec<Node>),
    Object(BTreeMap<String, Node>),
}

impl Node {
    fn write(&self, out: &mut String) {
        match self {
            Node::Scalar(text) => out.push_str(text),
            Node::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Node::Object(members) => {
                out.push('{');
                for (i, (key, value)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&quoted(key));
                    out.push(':');
                    value.write(out);
                }
                out.push('}');
            }
        }
    }
}

/// `text` as a JSON string: quoted, escaped as serde_json escapes it.
fn quoted(text: &str) -> String {
    // A string always serializes.
    serde_json::to_string(text).unwrap_or_default()
}

/// A walk over JSON text already known to be valid.
struct Walk<'a> {
    text: &'a str,
    at: usize,
}

impl Walk<'_> {
    fn peek(&mut self) -> Option<u8> {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.text.as_bytes().get(self.at) {
            self.at += 1;
        }
        self.text.as_bytes().get(self.at).copied()
    }

    fn node(&mut self) -> Node {
        match self.peek() {
            Some(b'{') => {
                self.at += 1;
                let mut members = BTreeMap::new();
                while self.peek() != Some(b'}') && self.at < self.text.len() {
                    let key = self.string();
                    self.peek();
                    self.at += 1; // ':'
                    members.insert(key, self.node());
                    if self.peek() == Some(b',') {
                        self.at += 1;
                    }
                }
                self.at += 1;
                Node::Object(members)
            }
            Some(b'[') => {
                self.at += 1;
                let mut items = Vec::new();
                while self.peek() != Some(b']') && self.at < self.text.len() {
                    items.push(self.node());
                    if self.peek() == Some(b',') {
                        self.at += 1;
                    }
                }
                self.at += 1;
                Node::Array(items)
            }
            Some(b'"') => Node::Scalar(quoted(&self.string())),
            _ => {
                let start = self.at;
                while let Some(b) = self.text.as_bytes().get(self.at)
                    && !matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
                {
                    self.at += 1;
                }
                Node::Scalar(self.text[start..self.at].to_owned())
            }
        }
    }

    /// The string at the walk's position, decoded.
    fn string(&mut self) -> String {
        let start = self.at;
        self.at += 1;
        while let Some(&b) = self.text.as_bytes().get(self.at) {
            self.at += 1;
            match b {
                b'\\' => self.at += 1,
                b'"' => break,
                _ => {}
            }
        }
        let end = self.at.min(self.text.len());
        self.text
            .get(start..end)
            .and_then(|quoted| serde_json::from_str(quoted).ok())
            .unwrap_or_default()
    }
}

/// The capability an input request needs: `elicitation` (form mode:
/// `elicitation.form`, URL mode: `elicitation.url`), `sampling`, `roots`.
///
/// Spec 2026-07-28 client/elicitation: an empty `elicitation` object means
/// form mode only, so a form request needs `elicitation` with either no
/// modes listed or `form` among them.
/// `-32021` naming what `requests` need that `meta` did not declare
/// (spec 2026-07-28 basic/patterns/mrtr: never ask for what the client did
/// not declare); for a retry's round and a task's question alike.
pub(crate) fn undeclared(requests: &InputRequests, meta: &RequestMeta) -> Result<(), ErrorObject> {
    let mut missing = serde_json::Map::new();
    for request in requests.values() {
        if let Some((name, sub)) = required_capability(request, meta)
            && !declared(meta, name, sub)
        {
            let entry = missing
                .entry(name.to_owned())
                .or_insert_with(|| Value::Object(Default::default()));
            if let (Some(sub), Value::Object(inner)) = (sub, entry) {
                inner.insert(sub.to_owned(), Value::Object(Default::default()));
            }
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    Err(ErrorObject::missing_required_client_capability(
        Value::Object(missing),
    ))
}

fn required_capability(
    request: &InputRequest,
    meta: &RequestMeta,
) -> Option<(&'static str, Option<&'static str>)> {
    match request {
        InputRequest::Elicit(crate::types::ElicitRequestParams::Url(_)) => {
            Some(("elicitation", Some("url")))
        }
        InputRequest::Elicit(_) => {
            let modes = meta.client_capabilities_raw().get("elicitation");
            let lists_modes = modes
                .and_then(Value::as_object)
                .is_some_and(|m| !m.is_empty());
            Some(("elicitation", lists_modes.then_some("form")))
        }
        InputRequest::CreateMessage(_) => Some(("sampling", None)),
        InputRequest::ListRoots(_) => Some(("roots", None)),
        _ => None,
    }
}

fn declared(meta: &RequestMeta, name: &str, sub: Option<&str>) -> bool {
    match sub {
        Some(sub) => meta.has_client_capability(&format!("{name}.{sub}")),
        None => meta.has_client_capability(name),
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Base64url without padding (RFC 4648 section 5).
fn base64url_encode(data: &[u8], out: &mut String) {
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
}

fn base64url_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in text.bytes() {
        let v = ALPHABET.iter().position(|&a| a == c)? as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // Leftover bits must be zero padding of the last character.
    (acc == 0).then_some(out)
}

#[cfg(test)]
mod tests;

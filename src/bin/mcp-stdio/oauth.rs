//! `serve-http`'s token validators, for `HttpOptions::protected_resource`:
//! a static list (`--token-file`) and RFC 7662 token introspection
//! (`--introspect`), asked on every request. Neither writes a token
//! anywhere: notes name the endpoint and what went wrong, never the token.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use mcp_stdio::{ProtectedResource, TokenInfo, Unauthorized};
use serde_json::Value;

use crate::args::Tokens;
use crate::stderr::Stderr;

/// How long an introspection may take, connection included.
const INTROSPECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest introspection answer read.
const MAX_ANSWER: u64 = 256 * 1024;

/// A validator for `tokens`; `notes` hears why an introspection failed.
/// It never panics (`HttpOptions::protected_resource`: the panic hook
/// would print the message): an unreadable token or answer is an
/// `Unauthorized`, an introspection that fails a note without the token.
pub fn validator(
    tokens: &Tokens,
    notes: &Arc<Stderr>,
) -> impl Fn(&str, &ProtectedResource) -> Result<TokenInfo, Unauthorized> + Send + Sync + 'static {
    let tokens = tokens.clone();
    // Each listed token with whom it stands for, worked out once.
    let listed: Vec<(String, TokenInfo)> = match &tokens {
        Tokens::List(list) => (list.iter())
            .map(|(token, scopes)| {
                let info = TokenInfo::new()
                    .subject(&list_subject(token))
                    .scopes(scopes.iter().cloned());
                (token.clone(), info)
            })
            .collect(),
        Tokens::Introspect { .. } => Vec::new(),
    };
    let notes = Arc::clone(notes);
    move |token: &str, resource: &ProtectedResource| match &tokens {
        // The list's tokens are this server's own: issued for it alone.
        Tokens::List(_) => (listed.iter())
            .find(|(listed, _)| same_secret(listed, token))
            .map(|(_, info)| info.clone())
            .ok_or_else(|| Unauthorized::invalid_token("not a token this server accepts")),
        Tokens::Introspect {
            url,
            client_id,
            client_secret,
        } => match introspect(url, client_id, client_secret, token) {
            Ok(answer) => token_info(&answer, resource.resource()),
            Err(why) => {
                notes.note(&format!(
                    "introspection at {} failed: {why}",
                    crate::url_for_people::url_for_people(url)
                ));
                Err(Unauthorized::invalid_token(
                    "the authorization server could not be asked about the token: retry later",
                ))
            }
        },
    }
}

/// The subject a `--token-file` token stands for: `token-` and the first
/// 16 hex digits of its SHA-256. Each listed token is someone of its own
/// (a legacy session opened with one is not reached with another: a
/// token that named nobody left its sessions open to every token), and
/// the subject a handler sees does not give the token away.
fn list_subject(token: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(token.as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("token-{hex}")
}

/// Whether `a` and `b` are equal, in a time that does not depend on
/// where they first differ (only on their lengths): how long a refusal
/// takes does not tell a caller how much of a listed token it guessed.
fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// What an introspection answer (RFC 7662 section 2.2) allows for
/// `resource`: an active token whose audience names it (spec 2026-07-28
/// basic/authorization: a server MUST NOT accept a token issued for
/// another resource; an answer without `aud` does not say it is for this
/// one, and is refused too).
fn token_info(answer: &Value, resource: &str) -> Result<TokenInfo, Unauthorized> {
    if answer["active"] != Value::Bool(true) {
        return Err(Unauthorized::invalid_token(
            "the token is not active (unknown, expired or revoked)",
        ));
    }
    let same = |aud: &str| aud.trim_end_matches('/') == resource.trim_end_matches('/');
    let for_us = match &answer["aud"] {
        Value::String(aud) => same(aud),
        Value::Array(auds) => auds.iter().any(|a| a.as_str().is_some_and(same)),
        _ => false,
    };
    if !for_us {
        return Err(Unauthorized::invalid_token(&format!(
            "the token was not issued for {resource} (its audience)"
        )));
    }
    let mut info = TokenInfo::new()
        .scopes(answer["scope"].as_str().unwrap_or("").split_whitespace())
        .claims(answer.clone());
    info.subject = answer["sub"].as_str().map(str::to_owned);
    info.client_id = answer["client_id"].as_str().map(str::to_owned);
    if let Some(exp) = answer["exp"].as_u64() {
        info.expires_at = SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(exp));
    }
    Ok(info)
}

/// Asks the introspection endpoint `url` (`http://` only) about `token`,
/// authenticated with HTTP Basic (RFC 7662 section 2.1; RFC 6749 section
/// 2.3.1: each credential form-encoded first): the JSON answer, or why
/// there is none (never naming the token).
fn introspect(url: &str, id: &str, secret: &str, token: &str) -> Result<Value, String> {
    let rest = url.strip_prefix("http://").ok_or("not an http:// URL")?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let with_port = if authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    };
    let addr = (with_port.to_socket_addrs().map_err(|e| e.to_string())?)
        .next()
        .ok_or("the host has no address")?;
    let mut socket =
        TcpStream::connect_timeout(&addr, INTROSPECT_TIMEOUT).map_err(|e| e.to_string())?;
    socket
        .set_write_timeout(Some(INTROSPECT_TIMEOUT))
        .map_err(|e| e.to_string())?;
    let basic = base64(format!("{}:{}", form(id), form(secret)).as_bytes());
    let body = format!("token={}&token_type_hint=access_token", form(token));
    // HTTP/1.0: the answer ends with the connection, never chunked.
    let request = format!(
        "POST {path} HTTP/1.0\r\nHost: {authority}\r\nAuthorization: Basic {basic}\r\nContent-Type: application/x-www-form-urlencoded\r\nAccept: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    socket
        .write_all(request.as_bytes())
        .map_err(|e| e.to_string())?;
    // One deadline for the whole answer: an endpoint that trickles it
    // holds the request no longer than one that is silent.
    let deadline = std::time::Instant::now() + INTROSPECT_TIMEOUT;
    let mut answer = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err("no whole answer within 5 s".into());
        }
        socket
            .set_read_timeout(Some(left))
            .map_err(|e| e.to_string())?;
        match socket.read(&mut chunk).map_err(|e| e.to_string())? {
            0 => break,
            n if (answer.len() + n) as u64 > MAX_ANSWER => {
                return Err(format!("an answer over {MAX_ANSWER} bytes"));
            }
            n => answer.extend_from_slice(&chunk[..n]),
        }
    }
    let text = String::from_utf8_lossy(&answer);
    let (head, json) = text.split_once("\r\n\r\n").ok_or("no HTTP answer")?;
    let status = head.split(' ').nth(1).unwrap_or("");
    if status != "200" {
        return Err(format!("it answered {status}, not 200"));
    }
    serde_json::from_str(json).map_err(|e| format!("its answer is not JSON: {e}"))
}

/// `application/x-www-form-urlencoded` of `text` (unreserved characters
/// kept, everything else `%XX`).
fn form(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Standard Base64, padded.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn base64_and_form_encoding_are_the_standard_ones() {
        assert_eq!(base64(b"client:s3cr%21t"), "Y2xpZW50OnMzY3IlMjF0");
        assert_eq!(base64(b"a"), "YQ==");
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(form("a b+c/d"), "a%20b%2Bc%2Fd");
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd") && !same_secret("abc", "ab"));
    }

    #[test]
    fn each_listed_token_is_a_subject_of_its_own_that_does_not_show_it() {
        let (a, b) = (list_subject("first-tok-1"), list_subject("second-tok-2"));
        assert_ne!(a, b);
        assert_eq!(a, list_subject("first-tok-1"));
        assert!(
            a.starts_with("token-") && a.len() == 22 && !a.contains("first"),
            "{a}"
        );
    }

    #[test]
    fn an_introspection_answer_is_accepted_only_active_and_for_this_resource() {
        let resource = "https://mcp.example.com/mcp";
        let good = json!({ "active": true, "aud": ["other", resource], "scope": "a b", "sub": "u", "exp": 4102444800u64 });
        let info = token_info(&good, resource).unwrap();
        assert_eq!(info.scopes, ["a", "b"]);
        assert_eq!(info.subject.as_deref(), Some("u"));
        assert!(info.expires_at.is_some());
        for bad in [
            json!({ "active": false, "aud": resource }),
            json!({ "active": true, "aud": "https://other.example.com/mcp" }),
            json!({ "active": true }),
        ] {
            assert!(token_info(&bad, resource).is_err(), "{bad}");
        }
    }
}

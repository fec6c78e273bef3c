//! The token endpoint (RFC 6749 section 3.2): a request with the client
//! authenticated as its registration says, its answer read and checked;
//! and the random texts and encodings the flow needs.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::Deserialize;

use super::discover::ServerMetadata;
use super::web::{Trust, Url, fetch, form};

/// A client registration with one authorization server.
#[derive(Debug, Clone)]
pub(super) struct Registration {
    pub client_id: String,
    pub client_secret: Option<String>,
    /// How it authenticates at the token endpoint.
    pub method: String,
}

/// A token endpoint's answer (RFC 6749 section 5.1), the members used.
#[derive(Deserialize)]
pub(super) struct TokenAnswer {
    pub access_token: String,
    #[serde(default)]
    token_type: Option<String>,
    #[serde(default, deserialize_with = "seconds")]
    pub expires_in: Option<u64>,
    #[serde(default)]
    pub refresh_token: Option<String>,
}

/// A token answer's `expires_in`: a number of seconds (RFC 6749 section
/// 5.1), or one written as a string (`"3599"`: Azure AD's v1 endpoint
/// and others send it so); a fraction is cut, anything else read as no
/// expiry. The member only says when the token runs out: an answer is not
/// refused for it. Read from its raw text: a number too large for a
/// double (`1e400`), which serde_json refuses as a value, is a far expiry.
fn seconds<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let raw = Box::<serde_json::value::RawValue>::deserialize(d)?;
    let (text, quoted) = match serde_json::from_str::<String>(raw.get()) {
        Ok(text) => (text, true),
        Err(_) => (raw.get().to_owned(), false),
    };
    let text = text.trim();
    if let Ok(exact) = text.parse::<u64>() {
        return Ok(Some(exact));
    }
    // `as` saturates: a huge one is a far expiry (`expires_at` adds it
    // saturating too). An infinity is a number's too large only: a
    // string's `"inf"` is no number of seconds.
    Ok(text
        .parse::<f64>()
        .ok()
        .filter(|n| *n >= 0.0 && (n.is_finite() || !quoted))
        .map(|n| n as u64))
}

/// Why no token came: one line, and whether the token endpoint refused
/// the client itself (`invalid_client`, RFC 6749 section 5.2: "unknown
/// client, no client authentication included, or unsupported
/// authentication method"), which makes its registration one known bad.
#[derive(Debug)]
pub(super) struct NoToken {
    pub why: String,
    pub bad_client: bool,
}

impl From<String> for NoToken {
    fn from(why: String) -> NoToken {
        NoToken {
            why,
            bad_client: false,
        }
    }
}

impl From<&str> for NoToken {
    fn from(why: &str) -> NoToken {
        NoToken::from(why.to_owned())
    }
}

/// POSTs `pairs` to the token endpoint, the client authenticated as its
/// registration says (RFC 6749 section 2.3.1: HTTP Basic of the
/// form-encoded ID and secret, or both in the form; a public client names
/// itself with `client_id`).
pub(super) fn token_request<'a>(
    trust: &Trust,
    metadata: &ServerMetadata,
    registration: &'a Registration,
    pairs: &mut Vec<(&'a str, &'a str)>,
) -> Result<TokenAnswer, NoToken> {
    let url = Url::parse(&metadata.token_endpoint)?;
    let mut headers = vec![
        (
            "Content-Type".to_owned(),
            "application/x-www-form-urlencoded".to_owned(),
        ),
        ("Accept".to_owned(), "application/json".to_owned()),
    ];
    let secret = registration.client_secret.as_deref();
    match (registration.method.as_str(), secret) {
        ("client_secret_basic", Some(secret)) => {
            let credentials = format!(
                "{}:{}",
                super::web::encode(&registration.client_id),
                super::web::encode(secret)
            );
            headers.push((
                "Authorization".to_owned(),
                format!(
                    "Basic {}",
                    crate::http::base64_encode(credentials.as_bytes())
                ),
            ));
        }
        ("client_secret_post", Some(secret)) => {
            pairs.push(("client_id", &registration.client_id));
            pairs.push(("client_secret", secret));
        }
        _ => pairs.push(("client_id", &registration.client_id)),
    }
    let answer = fetch(trust, "POST", &url, &headers, form(pairs).as_bytes())?;
    let grant = pairs.first().map_or("", |(_, g)| *g);
    if answer.status != 200 {
        return Err(NoToken {
            why: format!(
                "the token endpoint {url} refused the {grant} grant ({}){}",
                answer.status,
                oauth_error(&answer.body)
            ),
            bad_client: oauth_error_code(&answer.body).as_deref() == Some("invalid_client"),
        });
    }
    let token: TokenAnswer = serde_json::from_slice(&answer.body)
        .map_err(|_| format!("the token endpoint {url} answered something that is not a token"))?;
    if token.access_token.is_empty() || token.access_token.contains(['\r', '\n']) {
        return Err(format!("the token endpoint {url} answered an unusable access token").into());
    }
    if let Some(kind) = &token.token_type
        && !kind.eq_ignore_ascii_case("bearer")
    {
        return Err(
            format!("the token endpoint {url} issued a '{kind}' token, not a Bearer one").into(),
        );
    }
    Ok(token)
}

/// An OAuth error answer's `error`, if it is one.
fn oauth_error_code(body: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct OAuthError {
        error: String,
    }
    serde_json::from_slice::<OAuthError>(body)
        .ok()
        .map(|e| e.error)
}

/// An OAuth error answer's `error` and `error_description`, as
/// `: error (description)`, or nothing.
pub(super) fn oauth_error(body: &[u8]) -> String {
    #[derive(Deserialize)]
    struct OAuthError {
        error: String,
        error_description: Option<String>,
    }
    match serde_json::from_slice::<OAuthError>(body) {
        Ok(e) => match e.error_description {
            Some(d) => format!(": {} ({d})", e.error),
            None => format!(": {}", e.error),
        },
        Err(_) => String::new(),
    }
}

pub(super) fn json_headers() -> Vec<(String, String)> {
    vec![
        ("Content-Type".to_owned(), "application/json".to_owned()),
        ("Accept".to_owned(), "application/json".to_owned()),
    ]
}

/// 32 random bytes, Base64url: a PKCE verifier (43 characters, RFC 7636
/// section 4.1) or a `state`.
pub(super) fn random_text() -> Result<String, String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| format!("no random bytes for PKCE and state: {e}"))?;
    Ok(base64url(&bytes))
}

/// Base64url without padding (RFC 7636 appendix A).
pub(super) fn base64url(bytes: &[u8]) -> String {
    crate::http::base64_encode(bytes)
        .trim_end_matches('=')
        .replace('+', "-")
        .replace('/', "_")
}

/// When a token that expires in `expires_in` seconds (a token answer's
/// member, any `u64` the server sends) expires, in seconds since the Unix
/// epoch: the sum saturates, so a huge one is a far expiry, never an
/// overflow (a panic in a debug build, a past time in a release one).
pub(super) fn expires_at(expires_in: Option<u64>) -> Option<u64> {
    expires_in.map(|s| now().saturating_add(s))
}

/// Seconds since the Unix epoch.
pub(super) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Claim (review-fixes14b): an `expires_in` of an odd shape (negative,
    /// zero, huge, a string with blanks, `NaN`-like text, a number too
    /// large for a double) refuses the whole token answer, or overflows
    /// when added to the clock. False for all but one, which this shows:
    /// each is read as a number of seconds or as no expiry, the sum
    /// saturates, and the answer is taken.
    #[test]
    fn every_shape_of_expires_in_is_read_or_taken_as_no_expiry() {
        let read = |member: &str| -> Result<Option<u64>, String> {
            let text = format!(r#"{{"access_token": "a", "expires_in": {member}}}"#);
            serde_json::from_str::<TokenAnswer>(&text)
                .map(|answer| answer.expires_in)
                .map_err(|e| format!("expires_in {member}: {e}"))
        };
        for (member, seconds) in [
            ("3600", Some(3600)),
            (r#""3600""#, Some(3600)),
            (r#""3600 ""#, Some(3600)),
            (r#"" 3600""#, Some(3600)),
            (r#""+3600""#, Some(3600)),
            ("3599.9", Some(3599)),
            (r#""3599.9""#, Some(3599)),
            ("0", Some(0)),
            (r#""-0""#, Some(0)),
            ("-1", None),
            (r#""-1""#, None),
            ("-0.5", None),
            (r#""NaN""#, None),
            (r#""nan""#, None),
            (r#""inf""#, None),
            (r#""-infinity""#, None),
            (r#""1e30""#, Some(u64::MAX)),
            ("1e30", Some(u64::MAX)),
            ("18446744073709551616", Some(u64::MAX)),
            ("1e308", Some(u64::MAX)),
            (r#""0x10""#, None),
            (r#""3600s""#, None),
            (r#""""#, None),
            ("true", None),
            ("null", None),
            ("[3600]", None),
            (r#"{"s": 3600}"#, None),
        ] {
            assert_eq!(read(member), Ok(seconds), "expires_in {member}");
        }
        assert_eq!(expires_at(Some(u64::MAX)), Some(u64::MAX));
    }

    /// A number too large for a double (`1e400`) is a number all the
    /// same: read as a far expiry, as `1e30` is, not a reason to refuse
    /// the token answer. On main serde_json refuses it before `seconds`
    /// sees it ("number out of range"), and the token the user just
    /// authorized for is thrown away: "the token endpoint ... answered
    /// something that is not a token".
    #[test]
    fn an_expires_in_too_large_for_a_double_is_a_far_expiry() {
        let text = r#"{"access_token": "a", "expires_in": 1e400}"#;
        let answer = serde_json::from_str::<TokenAnswer>(text).map(|a| a.expires_in);
        assert_eq!(answer.map_err(|e| e.to_string()), Ok(Some(u64::MAX)));
    }
}

//! `serve-http` as an OAuth 2.1 protected resource: `--authorization-server`
//! (repeatable), `--oauth-resource`, `--scope` (repeatable), and how
//! tokens are checked: `--token-file FILE` (a static list) or
//! `--introspect URL` (RFC 7662) with `--introspect-credentials FILE` or
//! `MCP_STDIO_INTROSPECT_CREDENTIALS`. Files are read here, so that a bad
//! one is a usage error before anything starts.

use std::path::Path;

use super::{Flags, UsageError, usage};
use crate::url_for_people::url_for_people;

/// Where `--introspect` finds its client credentials when no file gives
/// them: `CLIENT_ID:CLIENT_SECRET`.
pub const INTROSPECT_CREDENTIALS_ENV: &str = "MCP_STDIO_INTROSPECT_CREDENTIALS";

/// The protected resource `serve-http` serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuth {
    /// `--authorization-server URL`, at least one.
    pub authorization_servers: Vec<String>,
    /// `--oauth-resource URL`: the canonical URI (default
    /// `http://LISTEN/mcp`, as bound).
    pub resource: Option<String>,
    /// `--scope SCOPE`: needed by every request, and advertised.
    pub scopes: Vec<String>,
    /// How tokens are checked.
    pub tokens: Tokens,
}

/// How `serve-http` checks a token.
#[derive(Clone, PartialEq, Eq)]
pub enum Tokens {
    /// `--token-file`: each token and the scopes it grants.
    List(Vec<(String, Vec<String>)>),
    /// `--introspect URL`, with the client credentials it is asked with.
    Introspect {
        url: String,
        client_id: String,
        client_secret: String,
    },
}

impl std::fmt::Debug for Tokens {
    /// Neither the tokens nor the secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Tokens::List(tokens) => write!(f, "List({} tokens)", tokens.len()),
            Tokens::Introspect { url, client_id, .. } => f
                .debug_struct("Introspect")
                .field("url", url)
                .field("client_id", client_id)
                .finish_non_exhaustive(),
        }
    }
}

/// The OAuth options, checked: `None` without `--authorization-server`
/// (then none of the others may be given).
pub(super) fn oauth(flags: &Flags) -> Result<Option<OAuth>, UsageError> {
    if flags.authorization_servers.is_empty() {
        let stray = [
            (flags.oauth_resource.is_some(), "--oauth-resource"),
            (!flags.scopes.is_empty(), "--scope"),
            (flags.token_file.is_some(), "--token-file"),
            (flags.introspect.is_some(), "--introspect"),
            (
                flags.introspect_credentials.is_some(),
                "--introspect-credentials",
            ),
        ];
        return match stray.iter().find(|(given, _)| *given) {
            Some((_, option)) => Err(usage(format!(
                "{option} needs --authorization-server URL (the issuer of the tokens serve-http accepts)"
            ))),
            None => Ok(None),
        };
    }
    if flags.bearer_token.is_some() || flags.bearer_token_file.is_some() {
        return Err(usage(
            "--bearer-token and --authorization-server are two ways to authorize: give one",
        ));
    }
    for url in flags
        .authorization_servers
        .iter()
        .chain(&flags.oauth_resource)
    {
        if !url.starts_with("https://") && !url.starts_with("http://") || url.contains('#') {
            return Err(usage(format!(
                "{url:?} is not an absolute http(s) URL without a fragment"
            )));
        }
    }
    let tokens = match (&flags.token_file, &flags.introspect) {
        (Some(_), Some(_)) => {
            return Err(usage("give --token-file or --introspect, not both"));
        }
        (None, None) => {
            return Err(usage(
                "--authorization-server needs a way to check tokens: --introspect URL (RFC 7662) or --token-file FILE",
            ));
        }
        (Some(file), None) => {
            if flags.introspect_credentials.is_some() {
                return Err(usage(
                    "--introspect-credentials applies to --introspect only",
                ));
            }
            Tokens::List(token_list(file)?)
        }
        (None, Some(url)) => {
            introspect_url(url)?;
            let (client_id, client_secret) = credentials(flags)?;
            Tokens::Introspect {
                url: url.clone(),
                client_id,
                client_secret,
            }
        }
    };
    Ok(Some(OAuth {
        authorization_servers: flags.authorization_servers.clone(),
        resource: flags.oauth_resource.clone(),
        scopes: flags.scopes.clone(),
        tokens,
    }))
}

/// `--introspect URL`: `http://` on a loopback host only (`localhost`,
/// `127.0.0.0/8`, `[::1]`). Every caller's token and this server's client
/// secret go to it: RFC 7662 section 4 says the endpoint MUST be reached
/// over TLS, and OAuth 2.1 section 1.5 allows loopback alone without.
/// The introspection speaks plain HTTP, so a remote endpoint is reached
/// through a TLS proxy on this host.
fn introspect_url(url: &str) -> Result<(), UsageError> {
    let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
    let rest = match scheme.as_deref() {
        Some("http") => &url[7..],
        Some("https") => {
            return Err(usage(
                "--introspect takes an http:// URL on a loopback host: serve-http does not speak TLS to the authorization server (put a TLS proxy on this host, and give its http://127.0.0.1:PORT/... URL)",
            ));
        }
        _ => {
            return Err(usage(format!(
                "--introspect takes an http:// URL on a loopback host, not {:?}",
                url_for_people(url)
            )));
        }
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => authority.split(':').next().unwrap_or(""),
    };
    let loopback = host.eq_ignore_ascii_case("localhost")
        || (host.parse::<std::net::IpAddr>()).is_ok_and(|ip| ip.to_canonical().is_loopback());
    if !loopback {
        return Err(usage(format!(
            "--introspect {:?} is plain http:// to a host other than loopback, which would send every token and this server's secret in clear text: give a loopback URL (a TLS proxy on this host to the authorization server)",
            url_for_people(url)
        )));
    }
    Ok(())
}

/// `--token-file FILE`: a token a line and the scopes it grants after it,
/// separated by spaces (`TOKEN SCOPE...`); blank lines and `#` comments
/// skipped. A token twice, or one no client could send in a header, is
/// refused.
fn token_list(file: &Path) -> Result<Vec<(String, Vec<String>)>, UsageError> {
    let named = || format!("--token-file {}", file.display());
    let text = std::fs::read_to_string(file).map_err(|e| usage(format!("{}: {e}", named())))?;
    let b64token = |t: &str| {
        let body = t.trim_end_matches('=');
        !body.is_empty()
            && body
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b))
    };
    let mut tokens: Vec<(String, Vec<String>)> = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let mut words = line.split_whitespace();
        let Some(token) = words.next().filter(|w| !w.starts_with('#')) else {
            continue;
        };
        // The token itself is never repeated in a message.
        let at = || format!("{}, line {}", named(), number + 1);
        if !b64token(token) {
            return Err(usage(format!(
                "{}: a token is letters, digits and -._~+/ (then = signs): write TOKEN SCOPE... on each line",
                at()
            )));
        }
        if tokens.iter().any(|(t, _)| t == token) {
            return Err(usage(format!(
                "{}: the same token as an earlier line",
                at()
            )));
        }
        tokens.push((token.to_owned(), words.map(str::to_owned).collect()));
    }
    if tokens.is_empty() {
        return Err(usage(format!("{}: no token in the file", named())));
    }
    Ok(tokens)
}

/// The client credentials `--introspect` authenticates with (RFC 7662
/// section 2.1): `CLIENT_ID:CLIENT_SECRET`, the one line of
/// `--introspect-credentials FILE`, else `MCP_STDIO_INTROSPECT_CREDENTIALS`
/// (neither is on the command line, which `ps` shows).
fn credentials(flags: &Flags) -> Result<(String, String), UsageError> {
    let (text, from) = match &flags.introspect_credentials {
        Some(file) => {
            let from = format!("--introspect-credentials {}", file.display());
            let text = std::fs::read_to_string(file).map_err(|e| usage(format!("{from}: {e}")))?;
            (text, from)
        }
        None => match std::env::var(INTROSPECT_CREDENTIALS_ENV) {
            Ok(text) => (text, INTROSPECT_CREDENTIALS_ENV.to_owned()),
            Err(_) => {
                return Err(usage(format!(
                    "--introspect needs this server's client credentials: --introspect-credentials FILE or {INTROSPECT_CREDENTIALS_ENV}, holding CLIENT_ID:CLIENT_SECRET"
                )));
            }
        },
    };
    let line = text.trim();
    match line.split_once(':') {
        Some((id, secret)) if !id.is_empty() && !secret.is_empty() && !line.contains('\n') => {
            Ok((id.to_owned(), secret.to_owned()))
        }
        _ => Err(usage(format!(
            "{from}: write CLIENT_ID:CLIENT_SECRET on one line"
        ))),
    }
}

//! The server as an OAuth 2.1 resource server (spec 2026-07-28
//! basic/authorization; 2025-11-25 basic/authorization says the same):
//! the protected-resource metadata it publishes (RFC 9728), the bearer
//! token every request to the endpoint must carry (RFC 6750 section 2.1),
//! handed to the application's validator, and the challenges that
//! answer a request without one (`401`) or with one that lacks a scope
//! (`403`, RFC 6750 section 3).
//!
//! Why a callback and no token format: a JWT's signature keys, an
//! introspection endpoint, a database of opaque tokens are the
//! application's choice, and each needs a crate this one should not pick.
//! The crate keeps what every validator would get wrong on its own: where
//! the token is read from (the header only, never the URL), that every
//! request is validated, the exact challenges, and that the token never
//! reaches a handler, an answer, an error or a note. (A validator that
//! panics quoting the token has it printed by the process's panic hook,
//! which a library does not replace: `HttpOptions::protected_resource`
//! says it must not.)
//!
//! The files, by job: this one reads and checks each request's token and
//! writes the challenges; `resource.rs` is the [`ProtectedResource`] the
//! application configures (its metadata, and the scopes each operation
//! needs).

mod resource;

use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use super::refusal::Refusal;
use crate::http::HttpRequest;
use crate::server::request_meta::TokenInfo;

/// The well-known path of protected-resource metadata (RFC 9728 section
/// 3).
pub(crate) const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The protected-resource metadata (RFC 9728) this server publishes, and
/// the scopes its requests need: what a client reads to find the
/// authorization server that issues tokens for it.
///
/// ```
/// use mcp_stdio::ProtectedResource;
/// let resource = ProtectedResource::new("https://mcp.example.com/mcp")
///     .authorization_server("https://auth.example.com")
///     .scopes_supported(["files:read", "files:write"])
///     .require_scopes(["files:read"])
///     .require_scopes_for("tools/call", Some("write_file"), ["files:write"]);
/// assert_eq!(
///     resource.metadata_url(),
///     "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
/// );
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ProtectedResource {
    resource: String,
    authorization_servers: Vec<String>,
    scopes_supported: Vec<String>,
    required: Vec<String>,
    operations: Vec<OperationScopes>,
    resource_name: Option<String>,
    documentation: Option<String>,
}

/// The scopes one operation needs besides the ones every request does.
#[derive(Debug, Clone, PartialEq)]
struct OperationScopes {
    method: String,
    /// A tool's or prompt's name, a resource's URI; `None`: any.
    name: Option<String>,
    scopes: Vec<String>,
}

/// Whether `uri` is `http://` (in any case) on a host other than
/// loopback (`localhost`, `127.0.0.0/8`, `::1`): what a client may not be
/// sent to for tokens.
fn clear_text_off_loopback(uri: &str) -> bool {
    let Some(rest) = (uri.get(..7))
        .filter(|s| s.eq_ignore_ascii_case("http://"))
        .map(|_| &uri[7..])
    else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    // As `guard.rs: is_loopback_name` (which this module's place in the
    // module graph keeps it from calling): a DNS name other than
    // `localhost` could be rebound anywhere.
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => authority.split(':').next().unwrap_or(""),
    };
    let loopback = host.eq_ignore_ascii_case("localhost")
        || (host.parse::<std::net::IpAddr>()).is_ok_and(|ip| ip.to_canonical().is_loopback());
    !loopback
}

/// `scheme://authority` and the path of a resource identifier (no
/// trailing `/`; empty for the root).
fn split_resource(resource: &str) -> (&str, &str) {
    let after_scheme = resource.find("://").map_or(0, |i| i + 3);
    let path_at = resource[after_scheme..]
        .find('/')
        .map_or(resource.len(), |i| after_scheme + i);
    let path = resource[path_at..].split(['?', '#']).next().unwrap_or("");
    (&resource[..path_at], path.trim_end_matches('/'))
}

/// A token validator's refusal, or an authorization hook's: answered
/// `401` (`403` for [`insufficient_scope`](Self::insufficient_scope))
/// with a `WWW-Authenticate` challenge and a JSON-RPC error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unauthorized {
    pub(crate) kind: Kind,
    pub(crate) message: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The hook's own challenge, as given.
    Challenge(String),
    /// `401`, `error="invalid_token"`.
    InvalidToken(String),
    /// `403`, `error="insufficient_scope"`, the scopes needed.
    InsufficientScope(Vec<String>, String),
}

impl Unauthorized {
    /// A refusal with `challenge` as its `WWW-Authenticate` value, for
    /// an [`HttpOptions::authorize`](crate::HttpOptions::authorize) hook:
    /// for example `Bearer realm="mcp"`.
    pub fn new(challenge: &str) -> Unauthorized {
        Unauthorized {
            kind: Kind::Challenge(challenge.to_owned()),
            message: None,
        }
    }

    /// The token is not valid here (unknown, revoked, expired, issued for
    /// another resource): `401` with `error="invalid_token"` and
    /// `description` as its `error_description` (for people; say what was
    /// wrong, never the token).
    pub fn invalid_token(description: &str) -> Unauthorized {
        Unauthorized {
            kind: Kind::InvalidToken(description.to_owned()),
            message: None,
        }
    }

    /// The token is valid but does not grant `scopes`, which the request
    /// needs: `403` with `error="insufficient_scope"` and these scopes.
    pub fn insufficient_scope<S: Into<String>>(
        scopes: impl IntoIterator<Item = S>,
    ) -> Unauthorized {
        Unauthorized {
            kind: Kind::InsufficientScope(
                scopes.into_iter().map(Into::into).collect(),
                String::new(),
            ),
            message: None,
        }
    }

    /// The message of the JSON-RPC error in the body (each refusal has
    /// one that says what to do).
    pub fn message(mut self, message: &str) -> Self {
        self.message = Some(message.to_owned());
        self
    }
}

/// A token validator: the request's bearer token and the resource it was
/// sent to; what the token allows, or a refusal.
pub(crate) type Validate =
    dyn Fn(&str, &ProtectedResource) -> Result<TokenInfo, Unauthorized> + Send + Sync;

/// The protected resource and its validator (in `HttpOptions`).
#[derive(Clone)]
pub(crate) struct Protection {
    pub metadata: ProtectedResource,
    pub validate: Arc<Validate>,
}

impl fmt::Debug for Protection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Protection")
            .field("metadata", &self.metadata)
            .finish_non_exhaustive()
    }
}

/// Whether `path` is where this resource's metadata is served: the root
/// well-known URI and the one suffixed with the resource's path or the
/// endpoint's (RFC 9728 section 3.1; spec 2026-07-28
/// authorization-server-discovery, "Well-Known URI": both forms).
pub(crate) fn is_metadata_path(protection: &Protection, endpoint: &str, path: &str) -> bool {
    let Some(suffix) = path.strip_prefix(WELL_KNOWN) else {
        return false;
    };
    let (_, resource_path) = split_resource(&protection.metadata.resource);
    suffix.is_empty() || suffix == resource_path || suffix == endpoint.trim_end_matches('/')
}

/// Spec 2026-07-28 basic/authorization, "Token Requirements": access
/// tokens MUST NOT be in the URI's query string (RFC 6750 section 2.3 is
/// not supported). A request with one is refused, whether or not the
/// server asks for tokens: the URL is written to logs along the way.
pub(crate) fn no_token_in_query(request: &HttpRequest) -> Result<(), Refusal> {
    let Some((_, query)) = request.target.split_once('?') else {
        return Ok(());
    };
    let named = (query.split('&'))
        .map(|pair| pair.split('=').next().unwrap_or(""))
        .any(|name| {
            name.eq_ignore_ascii_case("access_token") || name.eq_ignore_ascii_case("access%5Ftoken")
        });
    if named {
        return Err(Refusal::new(
            400,
            "an access token in the URL is refused: send it in the Authorization header (Authorization: Bearer TOKEN)",
        ));
    }
    Ok(())
}

/// The bearer token of a request: its one `Authorization` field's
/// `Bearer` credentials (RFC 6750 section 2.1; the scheme in any case).
/// `Ok(None)` without one (no field, or another scheme); for two fields
/// or a malformed token, `400` with an `error="invalid_request"`
/// challenge (RFC 6750 section 3.1: "The request is missing a required
/// parameter, ... or is otherwise malformed"), which names the metadata
/// a client discovers the authorization server from.
fn bearer<'r>(
    request: &'r HttpRequest,
    resource: &ProtectedResource,
) -> Result<Option<&'r str>, Refusal> {
    let mut fields = request.headers.get_all("authorization");
    let Some(field) = fields.next() else {
        return Ok(None);
    };
    if fields.next().is_some() {
        return Err(invalid_request(
            resource,
            "the Authorization header is sent more than once: send it once",
        ));
    }
    let (scheme, token) = field.split_once(' ').unwrap_or((field, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Ok(None);
    }
    let token = token.trim_start_matches(' ');
    let body = token.trim_end_matches('=');
    let b64 = |b: u8| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b);
    if body.is_empty() || !body.bytes().all(b64) {
        return Err(invalid_request(
            resource,
            "the Authorization header is malformed: send Authorization: Bearer TOKEN",
        ));
    }
    Ok(Some(token))
}

/// `400` for a request whose credentials cannot be read, with
/// `error="invalid_request"`, `message` as its `error_description` (it
/// never quotes the header) and the metadata's URL (RFC 6750 section 3.1).
fn invalid_request(resource: &ProtectedResource, message: &str) -> Refusal {
    let challenge = format!(
        "Bearer error=\"invalid_request\", error_description=\"{}\", resource_metadata=\"{}\"",
        quoted(message),
        quoted(&resource.metadata_url())
    );
    Refusal {
        status: 400,
        message: message.to_owned(),
        headers: vec![("WWW-Authenticate", challenge)],
        mismatch: false,
    }
}

/// Checks a request's bearer token against the protected resource (with
/// one configured): validated by the application's validator on every
/// request (spec 2026-07-28 basic/authorization, "Token Handling": tokens
/// MUST be validated), then its expiry and the scopes every request
/// needs. What the token allows, for the request's handlers; or the
/// refusal, `401` or `403` with its challenge.
pub(crate) fn authenticate(
    request: &HttpRequest,
    protection: &Protection,
) -> Result<Arc<TokenInfo>, Refusal> {
    let resource = &protection.metadata;
    let Some(token) = bearer(request, resource)? else {
        return Err(refusal(resource, Kind::Challenge(String::new()), None, ""));
    };
    // A validator that panics refuses the request, and is not told of it
    // again: the connection's thread goes on.
    let validated = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        (protection.validate)(token, resource)
    }));
    let info = match validated {
        Ok(Ok(info)) => info,
        Ok(Err(refused)) => return Err(refusal(resource, refused.kind, refused.message, token)),
        Err(_) => {
            return Err(Refusal::new(
                500,
                "the server's token validator failed: retry later, or tell the server's operator",
            ));
        }
    };
    still_valid(protection, &info)?;
    lacks(
        resource,
        &info,
        resource.required.iter().map(String::as_str).collect(),
    )?;
    Ok(Arc::new(info))
}

/// Checks that the token a request was validated with has not expired
/// (its `expires_at`): `401` with `error="invalid_token"` once it has
/// (spec 2026-07-28 basic/authorization, "Token Handling": a server MUST
/// answer an expired token `401`). Called when the head is in
/// (`authenticate`) and again once a POST's body is read
/// (`tcp.rs: serve_request`): a body may come up to
/// `header_timeout` after its head, and a request is served only with a
/// token still valid then.
pub(crate) fn still_valid(protection: &Protection, info: &TokenInfo) -> Result<(), Refusal> {
    if info.expires_at.is_some_and(|at| at <= SystemTime::now()) {
        let kind = Kind::InvalidToken("the access token has expired".into());
        return Err(refusal(&protection.metadata, kind, None, ""));
    }
    Ok(())
}

/// Checks the scopes a request held to `operations` needs (its body
/// read; each a method and what it names, `exchange.rs: operations`)
/// against what its token allows.
pub(crate) fn authorize_operation(
    protection: &Protection,
    info: &TokenInfo,
    operations: &[(String, Option<String>)],
) -> Result<(), Refusal> {
    let resource = &protection.metadata;
    lacks(resource, info, resource.needed(operations))
}

/// `403` when `info` lacks any of `needed`, naming all of them.
fn lacks(resource: &ProtectedResource, info: &TokenInfo, needed: Vec<&str>) -> Result<(), Refusal> {
    if needed.iter().all(|scope| info.has_scope(scope)) {
        return Ok(());
    }
    let needed = needed.into_iter().map(str::to_owned).collect();
    Err(refusal(
        resource,
        Kind::InsufficientScope(needed, String::new()),
        None,
        "",
    ))
}

/// The refusal of `kind`: its status, its challenge (RFC 6750 section 3,
/// in the order spec 2026-07-28's examples show), and its JSON-RPC
/// error's message. `token` is cut out of whatever the validator wrote.
fn refusal(
    resource: &ProtectedResource,
    kind: Kind,
    message: Option<String>,
    token: &str,
) -> Refusal {
    let scrub = |text: &str| match token.is_empty() {
        true => text.to_owned(),
        false => text.replace(token, "[the token]"),
    };
    let metadata = format!("resource_metadata=\"{}\"", quoted(&resource.metadata_url()));
    let scope = |scopes: &[String]| match scopes.is_empty() {
        true => String::new(),
        false => format!(", scope=\"{}\"", quoted(&scopes.join(" "))),
    };
    let describe = |text: &str| match text.is_empty() {
        true => String::new(),
        false => format!(", error_description=\"{}\"", quoted(&scrub(text))),
    };
    let (status, challenge, default) = match &kind {
        Kind::Challenge(_) => (
            401,
            format!("Bearer {metadata}{}", scope(resource.challenged())),
            format!(
                "this server needs an access token for {}: send it as Authorization: Bearer TOKEN (its authorization servers are in {})",
                resource.resource,
                resource.metadata_url()
            ),
        ),
        Kind::InvalidToken(description) => (
            401,
            format!(
                "Bearer error=\"invalid_token\"{}, {metadata}{}",
                describe(description),
                scope(resource.challenged())
            ),
            format!(
                "the access token is not valid here ({}): get a new one for {}",
                match description.is_empty() {
                    true => "refused".to_owned(),
                    false => scrub(description),
                },
                resource.resource
            ),
        ),
        Kind::InsufficientScope(scopes, description) => (
            403,
            format!(
                "Bearer error=\"insufficient_scope\"{}, {metadata}{}",
                scope(scopes),
                describe(description)
            ),
            format!(
                "the access token does not grant the scopes this request needs ({}): ask the authorization server for a token with them",
                scopes.join(" ")
            ),
        ),
    };
    Refusal {
        status,
        message: message.map_or(default, |m| scrub(&m)),
        headers: vec![("WWW-Authenticate", challenge)],
        mismatch: false,
    }
}

/// `text` as the inside of a quoted-string (RFC 9110 section 5.6.4) that
/// RFC 6750's `scope` and `error_description` allow: `"` and `\` and
/// control characters dropped.
fn quoted(text: &str) -> String {
    text.chars()
        .filter(|c| (' '..='~').contains(c) && *c != '"' && *c != '\\')
        .collect()
}

/// How a hook's refusal (`HttpOptions::authorize`) is answered: its own
/// challenge with `401`, or as a validator's would be without metadata.
pub(crate) fn hook_refusal(refused: Unauthorized) -> Refusal {
    let (status, challenge, default) = match refused.kind {
        Kind::Challenge(challenge) => (
            401,
            challenge,
            "the request is not authorized: send valid credentials".to_owned(),
        ),
        Kind::InvalidToken(description) => (
            401,
            format!(
                "Bearer error=\"invalid_token\", error_description=\"{}\"",
                quoted(&description)
            ),
            "the credentials are not valid here: send valid ones".to_owned(),
        ),
        Kind::InsufficientScope(scopes, _) => (
            403,
            format!(
                "Bearer error=\"insufficient_scope\", scope=\"{}\"",
                quoted(&scopes.join(" "))
            ),
            "the credentials do not grant what this request needs".to_owned(),
        ),
    };
    Refusal {
        status,
        message: refused.message.unwrap_or(default),
        headers: vec![("WWW-Authenticate", challenge)],
        mismatch: false,
    }
}

#[cfg(test)]
mod tests;

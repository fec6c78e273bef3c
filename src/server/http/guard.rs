//! The checks a request passes before its body is read (spec 2026-07-28
//! basic/transports/streamable-http, "Security & Endpoint"): `Host`
//! against DNS rebinding, `Origin`, the method, authorization,
//! `Content-Type` and `Accept`. Each refusal is a status and a one-line
//! reason.

use std::sync::Arc;

use super::auth;
use super::options::HttpOptions;
use super::refusal::Refusal;
use crate::http::HttpRequest;
use crate::server::request_meta::TokenInfo;

/// The name a loopback listener answers to besides its addresses.
const LOOPBACK_NAME: &str = "localhost";

/// Whether `name` (a host name, an IPv6 literal in brackets) names this
/// machine: `localhost`, or any loopback address, `127.0.0.0/8` and `::1`
/// written either way (`::ffff:127.0.0.2` is `127.0.0.2`). A DNS name
/// other than `localhost` could be rebound to any address, so it is not.
fn is_loopback_name(name: &str) -> bool {
    if name.eq_ignore_ascii_case(LOOPBACK_NAME) {
        return true;
    }
    let literal = name
        .strip_prefix('[')
        .and_then(|n| n.strip_suffix(']'))
        .unwrap_or(name);
    literal
        .parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.to_canonical().is_loopback())
}

/// The host name of `host[:port]` (an IPv6 literal keeps its brackets).
fn host_name(authority: &str) -> &str {
    if authority.starts_with('[') {
        return authority.split_inclusive(']').next().unwrap_or(authority);
    }
    authority.split(':').next().unwrap_or(authority)
}

/// The header fields with fixed names that the checks read, in lower
/// case: [`single_fields`] takes a `_` in their names as a `-`.
const FIXED_FIELDS: [&str; 7] = [
    "host",
    "origin",
    "content-type",
    "mcp-method",
    "mcp-name",
    "mcp-protocol-version",
    "mcp-session-id",
];

/// The header fields the checks read (`Host`, `Origin`, `Content-Type`)
/// and every `Mcp-*` one the spec's checks compare with the body
/// (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, each `Mcp-Param-*`,
/// `Mcp-Session-Id`): each at most once. A check reads one value; a
/// gateway in front may route on the last one, or on all of them joined,
/// and so see another method, tool, version or session than the one
/// checked (RFC 9110 section 5.3: a field that is not a list must not be
/// repeated). A header mirrored from the body (`Mcp-Method`, `Mcp-Name`,
/// `MCP-Protocol-Version`, `Mcp-Param-*`) sent twice is malformed, which
/// 2026-07-28 "Server Validation" refuses with `-32020` (`HeaderMismatch`);
/// the others with `-32600`. In the fixed names ([`FIXED_FIELDS`]) a `_`
/// counts as a `-`: CGI-style gateways (CGI, WSGI, many proxies'
/// variables) read both `Mcp-Method` and `Mcp_Method` as
/// `HTTP_MCP_METHOD`, so the two spellings are the same field sent twice.
/// Not in any other `Mcp-*` name: a tool may mark two arguments
/// `Region_Code` and `Region-Code` (2026-07-28 server/tools,
/// "x-mcp-header": `1*tchar`, unique without regard to case), which are
/// two fields, each compared with its own argument; the same name sent
/// twice, in any case, is still refused.
pub(crate) fn single_fields(request: &HttpRequest) -> Result<(), Refusal> {
    let checked = |name: &str| FIXED_FIELDS.contains(&name) || name.starts_with("mcp-");
    // One pass (a head may hold a thousand fields): the checked names
    // seen so far, in lower case (a fixed one with `_` as `-`).
    let mut seen = std::collections::HashSet::new();
    let twice = (request.headers.iter())
        .map(|(name, _)| {
            let name = name.to_ascii_lowercase();
            let dashed = name.replace('_', "-");
            match FIXED_FIELDS.contains(&dashed.as_str()) {
                true => dashed,
                false => name,
            }
        })
        .filter(|name| checked(name))
        .find(|name| !seen.insert(name.clone()));
    let Some(name) = twice else {
        return Ok(());
    };
    let mirrored = ["mcp-method", "mcp-name", "mcp-protocol-version"].contains(&name.as_str())
        || name.starts_with("mcp-param-");
    let message = format!("the {name} header is sent more than once: send it once");
    Err(Refusal {
        mismatch: mirrored,
        ..Refusal::new(400, message)
    })
}

/// `Host`: required (RFC 9112 section 3.2), and against DNS rebinding a
/// name this server answers to (see [`HttpOptions::allow_host`]).
pub(crate) fn host(
    request: &HttpRequest,
    options: &HttpOptions,
    loopback: bool,
) -> Result<(), Refusal> {
    let Some(host) = request.headers.get("host") else {
        if request.http10 {
            return Ok(());
        }
        return Err(Refusal::new(400, "the Host header is required in HTTP/1.1"));
    };
    let name = host_name(host);
    let allowed = if !options.hosts.is_empty() {
        options
            .hosts
            .iter()
            .any(|h| h.eq_ignore_ascii_case(host) || h.eq_ignore_ascii_case(name))
    } else if loopback {
        is_loopback_name(name)
    } else {
        true
    };
    if allowed {
        Ok(())
    } else {
        Err(Refusal::new(
            403,
            format!(
                "host '{host}' is not served here (DNS rebinding protection): allow it with HttpOptions::allow_host"
            ),
        ))
    }
}

/// Whether the application allowed `origin` ([`HttpOptions::allow_origin`]).
fn allowed(origin: &str, options: &HttpOptions) -> bool {
    let origin = origin.trim_end_matches('/');
    (options.origins.iter()).any(|o| o.eq_ignore_ascii_case(origin))
}

/// `Origin`, when present: an allowed origin or a loopback one (spec
/// 2026-07-28: an invalid origin MUST be answered `403`). A loopback
/// origin passes: the check is against other web origins reached through
/// DNS rebinding, and a loopback page is on this machine; it gets no CORS
/// fields, though, unless allowed ([`cors`]).
pub(crate) fn origin(request: &HttpRequest, options: &HttpOptions) -> Result<(), Refusal> {
    let Some(origin) = request.headers.get("origin") else {
        return Ok(());
    };
    let origin = origin.trim_end_matches('/');
    if allowed(origin, options) {
        return Ok(());
    }
    let loopback = origin
        .split_once("://")
        .filter(|(scheme, _)| matches!(*scheme, "http" | "https"))
        .is_some_and(|(_, authority)| is_loopback_name(host_name(authority)));
    if loopback {
        Ok(())
    } else {
        Err(Refusal::new(
            403,
            format!("origin '{origin}' is not allowed: allow it with HttpOptions::allow_origin"),
        ))
    }
}

/// The CORS fields of every response to a browser on an origin the
/// application allowed ([`HttpOptions::allow_origin`]; the Fetch standard,
/// "CORS protocol"): without `Access-Control-Allow-Origin` the page cannot
/// read the answer, and without `Access-Control-Expose-Headers` not the
/// session id a legacy `initialize` assigns or a `401`'s challenge. None
/// for a request without `Origin` (not a browser's cross-origin request),
/// and none for a loopback origin not allowed: [`origin`] lets it pass,
/// but a page on `http://localhost:1234` (a dev server running
/// third-party code, another local application) is another origin than
/// this server's, and must not read its tools' results (issue 47,
/// review-47h).
pub(crate) fn cors(request: &HttpRequest, options: &HttpOptions) -> Vec<(&'static str, String)> {
    match request.headers.get("origin") {
        Some(from) if allowed(from, options) => vec![
            ("Access-Control-Allow-Origin", from.to_owned()),
            ("Vary", "Origin".to_owned()),
            (
                "Access-Control-Expose-Headers",
                "Mcp-Session-Id, WWW-Authenticate".to_owned(),
            ),
        ],
        _ => Vec::new(),
    }
}

/// The answer to a CORS preflight (`OPTIONS` with
/// `Access-Control-Request-Method`) from an allowed origin, besides
/// [`cors`]'s fields: the methods the endpoint takes (`allow`), the
/// header fields the browser asked to send (the page's origin is trusted
/// to send any: the checks after the preflight read them), and how long
/// the browser may keep the answer. No preflight without an origin the
/// application allowed (a loopback one included: see [`cors`]): then only
/// `Allow`, as for any `OPTIONS`.
pub(crate) fn preflight(
    request: &HttpRequest,
    options: &HttpOptions,
    allow: &str,
) -> Vec<(&'static str, String)> {
    let asked = request.headers.get("access-control-request-method");
    if asked.is_none() || cors(request, options).is_empty() {
        return Vec::new();
    }
    let token = |name: &&str| {
        !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    };
    let names: Vec<&str> = (request.headers.get_all("access-control-request-headers"))
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(token)
        .collect();
    let mut fields = vec![
        ("Access-Control-Allow-Methods", allow.to_owned()),
        ("Access-Control-Max-Age", "600".to_owned()),
    ];
    if !names.is_empty() {
        fields.push(("Access-Control-Allow-Headers", names.join(", ")));
    }
    fields
}

/// Authorization: the hook, if any, then the protected resource's bearer
/// token, if one is configured (`auth::authenticate`). What the token
/// allows, for the request's handlers.
pub(crate) fn authorized(
    request: &HttpRequest,
    options: &HttpOptions,
) -> Result<Option<Arc<TokenInfo>>, Refusal> {
    if let Some(hook) = &options.authorize {
        hook(&request.headers).map_err(auth::hook_refusal)?;
    }
    match &options.protection {
        Some(protection) => auth::authenticate(request, protection).map(Some),
        None => Ok(None),
    }
}

/// `Content-Type: application/json` (parameters such as `charset`
/// allowed) with no content coding, and an `Accept` that takes JSON.
pub(crate) fn media_types(request: &HttpRequest) -> Result<(), Refusal> {
    let json = request
        .headers
        .get("content-type")
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return Err(Refusal::new(
            415,
            "the body must be sent with Content-Type: application/json",
        ));
    }
    // RFC 9110 8.4.1: a content coding the server does not read is 415.
    let headers = &request.headers;
    if let Some(coding) = headers
        .get_all("content-encoding")
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .find(|c| !c.is_empty() && !c.eq_ignore_ascii_case("identity"))
    {
        return Err(Refusal::new(
            415,
            format!("Content-Encoding '{coding}' is not supported: send the body uncompressed"),
        ));
    }
    // Spec 2026-07-28: the client MUST accept both; a client that accepts
    // JSON alone is still answered (with JSON), one that accepts neither is
    // refused.
    if headers.count("accept") > 0
        && ![
            "application/json",
            "text/event-stream",
            "application/*",
            "*/*",
        ]
        .iter()
        .any(|t| headers.lists("accept", t))
    {
        return Err(Refusal::new(
            406,
            "the Accept header must list application/json and text/event-stream",
        ));
    }
    Ok(())
}

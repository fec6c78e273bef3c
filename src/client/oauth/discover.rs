//! Finding the authorization server (spec 2026-07-28
//! basic/authorization/authorization-server-discovery): the challenge of a
//! `401` or `403` (`Challenge`), the protected resource's metadata
//! (RFC 9728, `resource_metadata`, else the well-known URIs in the spec's
//! order) with its `resource` checked against the server, and the
//! authorization server's metadata (RFC 8414, with OpenID Connect
//! Discovery's URIs in the spec's order) with its `issuer` checked.
//!
//! Which `resource` names the server (`names_server`): RFC 9728 section
//! 3.3 wants it identical to the resource whose well-known URI the
//! document was fetched from, or, for a document the challenge named, to
//! the URL of the request; the TypeScript SDK takes any resource of the
//! server's origin whose path is a prefix of the server's. This client
//! takes the server's own URL from any document, and a resource broader
//! than the server (its origin, a path the server's is beneath, at a
//! `/`) only from that resource's own well-known URI: the servers that
//! publish their origin at the root well-known URI (which the spec lets
//! a server at a path use, and the conformance suite's
//! `auth/metadata-var2` does) keep working, and a server cannot, from its
//! own document, have the client ask for a token for more than itself
//! (the resource indicator sent is the document's `resource`).

use serde::Deserialize;

use super::web::{Trust, Url, fetch};

/// What a `WWW-Authenticate: Bearer ...` challenge says (RFC 6750
/// section 3, RFC 9728 section 5.1).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Challenge {
    pub resource_metadata: Option<String>,
    pub scope: Option<String>,
    pub error: Option<String>,
}

impl Challenge {
    /// Reads the `Bearer` challenge among `values` (each a
    /// `WWW-Authenticate` field); parameters of other schemes are not
    /// taken.
    pub fn parse<'a>(values: impl IntoIterator<Item = &'a str>) -> Challenge {
        let mut challenge = Challenge::default();
        for value in values {
            let mut rest = value.trim();
            let mut bearer = false;
            while !rest.is_empty() {
                // A scheme name starts a challenge: a token followed by a
                // space (or the end), not by `=`.
                let token_end = rest.find([' ', '=', ',']).unwrap_or(rest.len());
                let after = rest[token_end..].trim_start();
                if !after.starts_with('=') {
                    bearer = rest[..token_end].eq_ignore_ascii_case("bearer");
                    rest = after.trim_start_matches(',').trim_start();
                    continue;
                }
                let name = rest[..token_end].trim().to_ascii_lowercase();
                let after = after[1..].trim_start();
                let (value, tail) = quoted_or_token(after);
                if bearer {
                    let slot = match name.as_str() {
                        "resource_metadata" => &mut challenge.resource_metadata,
                        "scope" => &mut challenge.scope,
                        "error" => &mut challenge.error,
                        _ => &mut None,
                    };
                    if slot.is_none() {
                        *slot = Some(value);
                    }
                }
                rest = tail.trim_start().trim_start_matches(',').trim_start();
            }
        }
        challenge
    }

    /// Whether it is a `403`'s `insufficient_scope` (RFC 6750 section 3.1).
    pub fn insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// A parameter's value, quoted (with `\` escapes) or a token, and what
/// follows it.
fn quoted_or_token(text: &str) -> (String, &str) {
    if let Some(inner) = text.strip_prefix('"') {
        let mut value = String::new();
        let mut chars = inner.char_indices();
        while let Some((at, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, next)) = chars.next() {
                        value.push(next);
                    }
                }
                '"' => return (value, &inner[at + 1..]),
                c => value.push(c),
            }
        }
        return (value, "");
    }
    let end = text.find([',', ' ']).unwrap_or(text.len());
    (text[..end].to_owned(), &text[end..])
}

/// A protected resource's metadata (RFC 9728 section 2), the members used.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ResourceMetadata {
    pub resource: String,
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
}

/// An authorization server's metadata (RFC 8414 section 2), the members
/// used.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ServerMetadata {
    pub issuer: String,
    #[serde(default)]
    pub authorization_endpoint: Option<String>,
    pub token_endpoint: String,
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    #[serde(default)]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub client_id_metadata_document_supported: bool,
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: bool,
}

/// The protected resource metadata of the server at `server`: from the
/// challenge's `resource_metadata` if it names one, else from the
/// well-known URIs (spec: "MUST fall back to constructing and requesting
/// the well-known URIs in the order listed": the endpoint's path and
/// query inserted, then the root). Its `resource` must name this server
/// ([`names_server`]), or it is refused: a document the challenge named
/// ends the discovery so; one at the path-inserted well-known URI leaves
/// the root one to be asked (a server that publishes its origin at both,
/// which only the root's own document may name), and the refusal is the
/// error when that one is no better.
pub(crate) fn resource_metadata(
    trust: &Trust,
    server: &Url,
    challenge: &Challenge,
) -> Result<ResourceMetadata, String> {
    // RFC 6750 section 5.3: a bearer token travels over TLS only (plain
    // http between loopback hosts, as `require_secure` allows, is no
    // network's). The server's side refuses such a resource too
    // (`ProtectedResource::unusable`).
    if server.scheme != "https" && !server.is_loopback() {
        return Err(format!(
            "{server} asks for authorization over plain http, off this machine: a token would travel in clear text, so none is obtained; use its https:// URL"
        ));
    }
    let candidates = match &challenge.resource_metadata {
        Some(url) => vec![Url::parse(url)?],
        None => {
            let mut urls = Vec::new();
            if !server.path.is_empty() || server.query.is_some() {
                urls.push(well_known(server, "oauth-protected-resource", true));
            }
            urls.push(well_known(server, "oauth-protected-resource", false));
            urls
        }
    };
    let mut tried = Vec::new();
    let mut refused = None;
    for url in candidates {
        require_secure(&url, server, "the protected resource metadata")?;
        let answer = fetch(trust, "GET", &url, &accept_json(), b"")?;
        if answer.status != 200 {
            tried.push(format!("{url} ({})", answer.status));
            continue;
        }
        // Something else answered `200` (a web page, a single-page
        // application's catch-all): the next URI is tried, as for an
        // error (spec: clients MUST fall back to them in order).
        let metadata: ResourceMetadata = match serde_json::from_slice(&answer.body) {
            Ok(metadata) => metadata,
            Err(e) => {
                tried.push(format!("{url} (200, {})", not_metadata(&answer.body, &e)));
                continue;
            }
        };
        if !names_server(&metadata.resource, server, &url) {
            let refusal = format!(
                "the protected resource metadata at {url} is for '{}', not for {server}: refused (RFC 9728 section 3.3)",
                metadata.resource
            );
            // Not used (section 3.3), as an error answer is not: the next
            // well-known URI is asked, whose document names its own
            // resource. The one a challenge named is the one to use.
            if challenge.resource_metadata.is_some() {
                return Err(refusal);
            }
            refused.get_or_insert(refusal);
            continue;
        }
        if metadata.authorization_servers.is_empty() {
            return Err(format!(
                "the protected resource metadata at {url} names no authorization server"
            ));
        }
        return Ok(metadata);
    }
    if let Some(refusal) = refused {
        return Err(refusal);
    }
    Err(format!(
        "the server asked for authorization, and no usable protected resource metadata was found (tried {})",
        tried.join(", ")
    ))
}

/// Whether `resource`, the `resource` of the metadata document fetched
/// from `document`, names the server at `server` (RFC 9728 section 3.3):
/// it is the server's URL ([`identical`]), wherever the document is; or
/// a segment-wise prefix of it ([`resource_matches`]: the server's
/// origin, or a path the server's is beneath) whose own well-known URI
/// `document` is (section 3.3's first rule, the document at the URI
/// built from a resource names that resource). So a resource broader
/// than the server is taken only from whoever serves that resource's
/// well-known URI (for the origin, the root one: the spec's second
/// well-known URI, and the conformance suite's auth/metadata-var2), never
/// from the server's own path-inserted document nor from another one
/// its challenge names (section 3.3's second rule: identical to the URL
/// of the request; a challenge that names the resource's own well-known
/// URI is taken at its word). The TypeScript SDK takes any prefix from anywhere: a
/// server at `https://host/tenant-a/mcp` could then have the client ask
/// for a token for all of `https://host` (the resource indicator sent is
/// this `resource`) and use it at its neighbours. A stricter client (the
/// URL of the request only) would refuse the servers that publish their
/// origin at the root well-known URI, as section 3.3 lets them and the
/// conformance suite does.
fn names_server(resource: &str, server: &Url, document: &Url) -> bool {
    if identical(resource, server) {
        return true;
    }
    let Ok(parsed) = Url::parse(resource) else {
        return false;
    };
    let own = well_known(&parsed, "oauth-protected-resource", true);
    resource_matches(resource, server)
        && document.scheme == own.scheme
        && document.host_port() == own.host_port()
        && document.path == own.path.trim_end_matches('/')
        && document.query.is_none()
}

/// Whether `resource` is the URL `server`: the same scheme and host (in
/// any case: spec 2026-07-28 basic/authorization, "Canonical Server
/// URI"), port (the scheme's default written or not), path (a `/` at its
/// end or not) and query, if the resource has one (a server reached with
/// a query, a key or a tenant, names its endpoint without it: RFC 8707
/// section 2, a resource SHOULD NOT have one).
pub(crate) fn identical(resource: &str, server: &Url) -> bool {
    let Ok(resource) = Url::parse(resource) else {
        return false;
    };
    resource.scheme == server.scheme
        && resource.host_port() == server.host_port()
        && resource.path.trim_end_matches('/') == server.path.trim_end_matches('/')
        && (resource.query.is_none() || resource.query == server.query)
}

/// Whether `resource` (a metadata document's) covers the server at
/// `server`: the same scheme, host and port, no query, and a path that
/// is the server's or a segment-wise prefix of it (a resource at the
/// root covers the server's endpoints beneath it). A document's is taken
/// only as [`names_server`] says; a kept token's when this or
/// [`identical`] says (the resources the discovery takes).
pub(crate) fn resource_matches(resource: &str, server: &Url) -> bool {
    let Ok(resource) = Url::parse(resource) else {
        return false;
    };
    if resource.scheme != server.scheme
        || resource.host_port() != server.host_port()
        || resource.query.is_some()
    {
        return false;
    }
    let prefix = resource.path.trim_end_matches('/');
    server.path == prefix
        || server
            .path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// The metadata of the authorization server `issuer` (spec: RFC 8414 path
/// insertion, then OpenID Connect Discovery with path insertion, then with
/// path appending; for an issuer without a path the first two), refused
/// when its `issuer` is not identical to `issuer` (RFC 8414 section 3.3)
/// or an endpoint it names is not served over https (but on loopback).
pub(crate) fn server_metadata(
    trust: &Trust,
    issuer: &str,
    server: &Url,
) -> Result<ServerMetadata, String> {
    let url = Url::parse(issuer)?;
    // RFC 8414 section 2: an issuer is a URL "that uses the https scheme
    // and has no query or fragment components" (a fragment `Url::parse`
    // refuses); section 3.1 builds the well-known URI from its path alone.
    // Its query is not shown: it may be a key.
    if url.query.is_some() {
        return Err(format!(
            "the authorization server {url} is named with a query, which an issuer identifier may not have (RFC 8414 section 2): its metadata cannot be looked for"
        ));
    }
    require_secure(&url, server, "the authorization server")?;
    let mut candidates = vec![
        well_known(&url, "oauth-authorization-server", true),
        well_known(&url, "openid-configuration", true),
    ];
    if !url.path.is_empty() {
        candidates.push(Url::parse(&format!(
            "{}{}/.well-known/openid-configuration",
            url.origin(),
            url.path
        ))?);
    }
    let mut tried = Vec::new();
    for candidate in candidates {
        let answer = fetch(trust, "GET", &candidate, &accept_json(), b"")?;
        if answer.status != 200 {
            tried.push(format!("{candidate} ({})", answer.status));
            continue;
        }
        // Something else answered `200` (a web page, a single-page
        // application's catch-all): the next URI is tried, as for an
        // error (spec: clients MUST attempt them in order).
        let metadata: ServerMetadata = match serde_json::from_slice(&answer.body) {
            Ok(metadata) => metadata,
            Err(e) => {
                tried.push(format!(
                    "{candidate} (200, {})",
                    not_metadata(&answer.body, &e)
                ));
                continue;
            }
        };
        // Spec 2026-07-28 authorization-server-discovery: "the `issuer`
        // value in the document MUST be identical to the issuer
        // identifier used to construct the well-known URL".
        if metadata.issuer != issuer {
            return Err(format!(
                "the authorization server metadata at {candidate} names the issuer '{}', not '{issuer}': refused",
                metadata.issuer
            ));
        }
        for endpoint in [
            Some(&metadata.token_endpoint),
            metadata.authorization_endpoint.as_ref(),
            metadata.registration_endpoint.as_ref(),
        ]
        .into_iter()
        .flatten()
        {
            require_secure(
                &Url::parse(endpoint)?,
                server,
                "an authorization server endpoint",
            )?;
        }
        return Ok(metadata);
    }
    Err(format!(
        "no usable authorization server metadata found for {issuer} (tried {})",
        tried.join(", ")
    ))
}

/// Why a `200`'s `body` is not the metadata looked for (`error`, serde's):
/// "not metadata" for something else (a web page), or, for a JSON object
/// (metadata, but not valid: a member left out, one of the wrong type),
/// what is wrong with it, which the user needs to hear of when no other
/// URI answers.
fn not_metadata(body: &[u8], error: &serde_json::Error) -> String {
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(serde_json::Value::Object(_)) => format!("metadata not valid: {error}"),
        _ => "not metadata".to_owned(),
    }
}

/// `url`'s well-known `suffix` URL: the suffix inserted between its
/// host and its path and query, which it keeps (`inserted`: RFC 9728
/// section 3.1, "between the host component and the path and/or query
/// components", a `/` that ends the host removed, as `Url::parse` does;
/// RFC 8414 section 3.1 the same for an issuer, which has no query), or
/// the root's, which has neither (the origin's document).
fn well_known(url: &Url, suffix: &str, inserted: bool) -> Url {
    let (path, query) = match inserted {
        true => (url.path.as_str(), url.query.clone()),
        false => ("", None),
    };
    Url {
        scheme: url.scheme.clone(),
        authority: url.authority.clone(),
        path: format!("/.well-known/{suffix}{path}"),
        query,
    }
}

fn accept_json() -> Vec<(String, String)> {
    vec![("Accept".to_owned(), "application/json".to_owned())]
}

/// Refuses what a client must not fetch for the MCP server `server`
/// (spec 2026-07-28 basic/authorization, "Communication Security":
/// authorization server endpoints over HTTPS): plain `http`, but between
/// loopback hosts (a local server, as in tests and development); and for a
/// server that is not on loopback, any loopback host, so that a remote
/// server cannot steer the client to this machine's own services. A
/// host is judged by its spelling and by what it resolves to
/// (`Url::is_loopback`, `Url::may_be_loopback`): for a remote server, a
/// name one of whose addresses is this machine is refused; the connection
/// judges again the addresses it connects to (`Trust::for_server`).
pub(crate) fn require_secure(url: &Url, server: &Url, what: &str) -> Result<(), String> {
    let refused = if server.is_loopback() {
        !url.is_loopback() && url.scheme != "https"
    } else {
        url.may_be_loopback() || url.scheme != "https"
    };
    if refused {
        return Err(format!(
            "{what} at {} is refused: only https, and loopback only for a server on loopback",
            url.origin()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod resource_tests;
#[cfg(test)]
mod tests;

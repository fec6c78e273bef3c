//! [`HttpOptions`]: how [`Server::serve_http`](crate::Server::serve_http)
//! serves, its limits and its security settings (authorization's types
//! are in `auth`).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::auth::{ProtectedResource, Protection, Unauthorized};
use crate::http::HttpHeaders;
use crate::server::request_meta::TokenInfo;

/// An authorization hook: sees every POST's headers before its body is
/// read.
pub(crate) type Authorize = dyn Fn(&HttpHeaders) -> Result<(), Unauthorized> + Send + Sync;

/// The settings of the Streamable HTTP transport, built by chaining.
///
/// ```
/// # use std::time::Duration;
/// let options = mcp_stdio::HttpOptions::new()
///     .path("/mcp")
///     .allow_origin("https://app.example.com")
///     .max_connections(32)
///     .header_timeout(Duration::from_secs(5));
/// # drop(options);
/// ```
///
/// Defaults: endpoint `/mcp`; origins: none but loopback ones
/// (`http://localhost:*`, and any loopback address: `http://127.0.0.1:*`,
/// `http://[::1]:*`, ...; without CORS, so no browser page reads an
/// answer) and requests without `Origin`; hosts: loopback
/// names only when the listener
/// is bound to a loopback address, any otherwise; 64 connections; a body
/// of at most 4 MiB; 16 KiB of request line and headers, which must
/// arrive within 10 s (a new connection's from its start); an idle
/// keep-alive connection closed after 60 s; a keep-alive comment on an
/// SSE stream every 15 s; a client that takes nothing of its response for
/// 10 s dropped.
#[derive(Clone)]
pub struct HttpOptions {
    pub(crate) path: String,
    pub(crate) origins: Vec<String>,
    pub(crate) hosts: Vec<String>,
    pub(crate) max_connections: usize,
    pub(crate) max_sessions: usize,
    pub(crate) max_session_bytes: usize,
    pub(crate) max_body_bytes: usize,
    pub(crate) max_head_bytes: usize,
    pub(crate) header_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) keep_alive_interval: Duration,
    pub(crate) write_timeout: Duration,
    pub(crate) authorize: Option<Arc<Authorize>>,
    pub(crate) protection: Option<Protection>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            path: "/mcp".into(),
            origins: Vec::new(),
            hosts: Vec::new(),
            max_connections: 64,
            max_sessions: 1024,
            max_session_bytes: 64 * 1024 * 1024,
            max_body_bytes: 4 * 1024 * 1024,
            max_head_bytes: 16 * 1024,
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            keep_alive_interval: Duration::from_secs(15),
            write_timeout: Duration::from_secs(10),
            authorize: None,
            protection: None,
        }
    }
}

impl fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpOptions")
            .field("path", &self.path)
            .field("origins", &self.origins)
            .field("hosts", &self.hosts)
            .field("max_connections", &self.max_connections)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("authorize", &self.authorize.is_some())
            .field("protection", &self.protection)
            .finish_non_exhaustive()
    }
}

impl HttpOptions {
    /// The defaults (see the type's docs).
    pub fn new() -> HttpOptions {
        HttpOptions::default()
    }

    /// The MCP endpoint's path (default `/mcp`); any other path is `404`.
    pub fn path(mut self, path: &str) -> Self {
        self.path = path.to_owned();
        self
    }

    /// Allows requests whose `Origin` is exactly `origin`
    /// (`scheme://host[:port]`, compared without regard to case). Any other
    /// origin but loopback ones is answered `403` (spec 2026-07-28
    /// basic/transports/streamable-http, "Security": DNS rebinding). A
    /// browser on an allowed origin, and only there, passes the CORS
    /// preflight (`OPTIONS`), and every answer to it carries
    /// `Access-Control-Allow-Origin`, so its page can read them. A loopback
    /// origin not allowed here passes the `403` check but gets no CORS
    /// fields: a page on another local port (a dev server, another local
    /// application) is another origin, and reads nothing. Allow a browser
    /// client by its page's origin: the MCP Inspector's direct mode, say,
    /// with `.allow_origin("http://localhost:6274")`.
    pub fn allow_origin(mut self, origin: &str) -> Self {
        self.origins.push(origin.trim_end_matches('/').to_owned());
        self
    }

    /// Allows requests whose `Host` is `host` (a name, or `name:port`).
    /// Once any host is allowed, only the allowed ones are; until then a
    /// listener on a loopback address accepts loopback names only
    /// (`localhost`, and any loopback address: `127.0.0.1`, `127.0.0.2`,
    /// `[::1]`, `[::ffff:127.0.0.1]`, ...), against DNS rebinding.
    pub fn allow_host(mut self, host: &str) -> Self {
        self.hosts.push(host.to_owned());
        self
    }

    /// At most this many connections at once (default 64), a thread each.
    /// A connection kept alive between requests counts (for up to the idle
    /// timeout), and so does an open stream for as long as the client
    /// keeps it: a 2026-07-28 `subscriptions/listen`, or a legacy session's
    /// GET stream, which the SDKs' legacy clients open at once. Allow about
    /// two per client. At the cap one connection gives way to let a new
    /// one in: one serving a request whose client has gone (a legacy
    /// request, which its client's close does not cancel, is cancelled
    /// then), else one silent since it opened, else one whose request trickles
    /// in (a read of it had to wait for bytes; answered `503` with
    /// `Retry-After`), else one idle between requests for a second or
    /// more, else the oldest legacy GET stream (its client may open it
    /// again); each time the one that has waited, or been reading, longest.
    /// Connections that send nothing or trickle a request, and sessions
    /// left open by clients that went away, do not lock later clients
    /// out. A connection serving a request for a client still there, one
    /// whose request came whole,
    /// one whose next request has arrived, and one answered a moment ago
    /// (its client may be sending its next request) keep their place: when
    /// only such are open, one more is answered `503` and closed at once.
    pub fn max_connections(mut self, max: usize) -> Self {
        self.max_connections = max.max(1);
        self
    }

    /// At most this many legacy sessions (2025-11-25 `Mcp-Session-Id`,
    /// feature `legacy`) are kept at once (default 1,024, at least 1). Past
    /// it a new `initialize` makes one give way, whose client is then
    /// answered `404` and starts a new session: first a session that never
    /// did anything after its `initialize` (the one idle longest), then
    /// one with nothing open (no GET stream, no POST), idle longest, and
    /// only then one with a stream open (which ends). Each session holds at
    /// most 64 KiB of `initialize` params and 256 KiB of subscribed URIs,
    /// and all of them together at most [`HttpOptions::max_session_bytes`].
    pub fn max_sessions(mut self, max: usize) -> Self {
        self.max_sessions = max.max(1);
        self
    }

    /// At most this many bytes are kept by the legacy sessions together
    /// (default 64 MiB): their `initialize` params and subscribed URIs.
    /// A new session past it makes others give way, in the order
    /// [`HttpOptions::max_sessions`] says, until it fits; a session's
    /// `resources/subscribe` that would pass it is refused (`-32603`,
    /// saying so) once that session holds more than its share (this
    /// budget divided by `max_sessions`: 64 KiB at the defaults). Without
    /// it 1,024 sessions could keep some 320 MiB.
    pub fn max_session_bytes(mut self, max: usize) -> Self {
        self.max_session_bytes = max;
        self
    }

    /// The largest request body accepted (default 4 MiB); a larger one is
    /// answered `413`. A chunked body's framing (its size lines and the
    /// line ends after its chunks) may take as many bytes again, so a body
    /// within the limit comes in chunks of any reasonable size; its
    /// trailer has the 16 KiB of the request's head.
    pub fn max_body_bytes(mut self, max: usize) -> Self {
        self.max_body_bytes = max;
        self
    }

    /// How long a request's line, headers and body may take to arrive once
    /// it began (default 10 s, at least 100 ms): a slower client is
    /// answered `408` and closed. A new connection's first request is on
    /// this clock from the connection's start: one that sends nothing is
    /// closed when it runs out, without an answer (the idle timeout is for
    /// a kept-alive connection's next request).
    pub fn header_timeout(mut self, timeout: Duration) -> Self {
        // Less would turn away clients whose first packet comes a moment
        // after their connection.
        self.header_timeout = timeout.max(Duration::from_millis(100));
        self
    }

    /// How long a keep-alive connection may wait for its next request
    /// (default 60 s, at least 1 ms) before it is closed.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// How often an open SSE stream with nothing to send carries a comment
    /// (`:` and an empty line) so that proxies and clients keep it open
    /// (default 15 s).
    pub fn keep_alive_interval(mut self, interval: Duration) -> Self {
        self.keep_alive_interval = interval;
        self
    }

    /// How long a write to a client may wait without the client taking any
    /// of it (default 10 s, at least 1 ms): past it the client is taken to
    /// be gone, its connection is closed and its requests are cancelled (a
    /// legacy request runs on to its end, its reply going nowhere: see
    /// `Server::serve_http`).
    /// What the server publishes goes into every listening stream's output
    /// before the publisher goes on (so that it precedes the publisher's
    /// reply); a client that stops reading would otherwise keep its
    /// connection, and its requests, for as long as it stays connected.
    pub fn write_timeout(mut self, timeout: Duration) -> Self {
        self.write_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// Makes the endpoint an OAuth 2.1 protected resource (spec
    /// 2026-07-28 basic/authorization): `resource`'s metadata (RFC 9728)
    /// is served at `/.well-known/oauth-protected-resource` and at that
    /// path followed by the resource's path (and the endpoint's), to any
    /// origin; and every request to the endpoint must carry
    /// `Authorization: Bearer TOKEN`, which `validate` is given with the
    /// resource, on every request, before the body is read.
    ///
    /// `validate` returns what the token allows ([`TokenInfo`]: handlers
    /// read it as [`RequestContext::token_info`](crate::RequestContext::token_info)),
    /// or a refusal: [`Unauthorized::invalid_token`] (`401`) or
    /// [`Unauthorized::insufficient_scope`] (`403`). **It must check that
    /// the token was issued for [`ProtectedResource::resource`]** (its
    /// audience, `aud`, or the introspection's answer): the spec says a
    /// server MUST NOT accept a token issued for another resource. Check
    /// its signature or ask its issuer, as your tokens need; this crate
    /// picks no token format.
    ///
    /// **It must not panic with the token in the panic's message** (an
    /// `expect` or `unwrap` of an error that quotes its input, a
    /// `format!` of the token in a `panic!`): a panic is answered `500`
    /// and the connection goes on, but the process's panic hook prints
    /// the message (to stderr, the server's log) before the unwind
    /// begins, and a library does not replace a process-wide hook
    /// (README "A library is a guest"). Return
    /// [`Unauthorized::invalid_token`] for a token it cannot read.
    ///
    /// The server then answers, itself: a request without a bearer token
    /// `401` with `WWW-Authenticate: Bearer resource_metadata="...",
    /// scope="..."` (the scopes every request needs, else those
    /// supported); an expired token (`TokenInfo::expires_at`) `401`
    /// `invalid_token`, also one that expires while the request's body
    /// comes (the expiry is looked at again once the body is in); one
    /// without the scopes the request needs
    /// ([`ProtectedResource::require_scopes`], `require_scopes_for`) `403`
    /// `insufficient_scope` with them; two `Authorization` headers or a
    /// malformed token `400` with `error="invalid_request"`. A token in the URL's query
    /// (`?access_token=`) is refused with `400` whether or not this is
    /// set. The token never appears in an answer, a note or a handler's
    /// context.
    ///
    /// What a request creates is bound to whom its token stands for
    /// ([`TokenInfo::owner`]: its subject, else its client, with its
    /// issuer when the validator says it, [`TokenInfo::issuer`], which a
    /// validator that trusts several authorization servers must): a task, and a
    /// legacy session; to a request whose token stands for anyone else
    /// they are unknown. A stream (a `subscriptions/listen`, a legacy
    /// session's GET stream) ends when the token it was opened with
    /// expires ([`TokenInfo::expires_at`]), and the client reconnects with
    /// a fresh one. A legacy POST's stream does not end (its request,
    /// authorized when it came, runs to its end, its progress and result
    /// sent), but from its token's expiry it carries none of its session's
    /// notifications (without a GET stream they go to the session's newest
    /// POST whose token has not expired). Any other request runs to its
    /// end. A token is not asked about again while its stream lasts, so
    /// set `expires_at` for tokens that may be revoked.
    ///
    /// ```
    /// use mcp_stdio::{HttpOptions, ProtectedResource, TokenInfo, Unauthorized};
    /// let resource = ProtectedResource::new("https://mcp.example.com/mcp")
    ///     .authorization_server("https://auth.example.com")
    ///     .scopes_supported(["mcp:tools"])
    ///     .require_scopes(["mcp:tools"]);
    /// let options = HttpOptions::new().protected_resource(resource, |token, resource| {
    ///     // Look the token up, check its signature, or introspect it;
    ///     // then check that it is for this resource.
    ///     match token {
    ///         "s3cret" => Ok(TokenInfo::new().subject("alice").scopes(["mcp:tools"])),
    ///         _ => Err(Unauthorized::invalid_token(&format!(
    ///             "not a token for {}",
    ///             resource.resource()
    ///         ))),
    ///     }
    /// });
    /// # drop(options);
    /// ```
    pub fn protected_resource(
        mut self,
        resource: ProtectedResource,
        validate: impl Fn(&str, &ProtectedResource) -> Result<TokenInfo, Unauthorized>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        self.protection = Some(Protection {
            metadata: resource,
            validate: Arc::new(validate),
        });
        self
    }

    /// Checks every request's headers before its body is read (for
    /// credentials that are not OAuth's: an API key, a fixed token; for
    /// OAuth see [`protected_resource`](Self::protected_resource), which
    /// runs after this hook); an `Err` is answered `401` with its
    /// `WWW-Authenticate` challenge ([`Unauthorized::new`]).
    ///
    /// ```
    /// use mcp_stdio::{HttpOptions, Unauthorized};
    /// let expected = b"Bearer s3cret";
    /// let options = HttpOptions::new().authorize(move |headers| {
    ///     let sent = headers.get("authorization").unwrap_or("").as_bytes();
    ///     // Every byte compared, wherever the first difference is: how
    ///     // long the answer takes says nothing of the secret.
    ///     let differs = (sent.iter().zip(expected)).fold(0, |d, (a, b)| d | (a ^ b));
    ///     if sent.len() == expected.len() && differs == 0 {
    ///         Ok(())
    ///     } else {
    ///         Err(Unauthorized::new(r#"Bearer realm="mcp""#))
    ///     }
    /// });
    /// # drop(options);
    /// ```
    pub fn authorize(
        mut self,
        hook: impl Fn(&HttpHeaders) -> Result<(), Unauthorized> + Send + Sync + 'static,
    ) -> Self {
        self.authorize = Some(Arc::new(hook));
        self
    }
}

//! What an HTTP client adds to [`ClientBuilder`]: extra headers (a bearer
//! token, or a callback asked before every request), CA certificates to
//! trust for `https://` (feature `https`) and
//! [`ClientBuilder::connect_url`].

use std::fmt;
use std::sync::Arc;

use super::stream::Connector;
#[cfg(feature = "https")]
use super::tls::ExtraCa;
use super::url::Endpoint;
use crate::client::link::Link;
use crate::client::oauth::web::Trust;
use crate::client::oauth::{Authorizer, OAuth};
use crate::client::{Client, ClientBuilder};
use crate::error::Error;

/// Headers computed before every request, `(name, value)`: for a token
/// that expires, say. Set with [`ClientBuilder::header_source`].
pub type HeaderSource = dyn Fn() -> Vec<(String, String)> + Send + Sync;

/// The HTTP settings of a builder.
#[derive(Clone, Default)]
pub(crate) struct HttpSettings {
    fixed: Vec<(String, String)>,
    source: Option<Arc<HeaderSource>>,
    /// How tokens are obtained ([`ClientBuilder::oauth`]).
    oauth: Option<OAuth>,
    /// The authorization of the connected client, made from `oauth` by
    /// `connect_url`.
    pub authorizer: Option<Arc<Authorizer>>,
    /// CA certificates trusted besides the system's (`https://`).
    #[cfg(feature = "https")]
    pub extra_cas: Vec<ExtraCa>,
    /// Set by `connect_url`: closing waits for the session's end.
    pub connected: bool,
    /// How long opening a legacy session waits for the server to answer
    /// its GET stream (`Shared::start_listening`); set by `connect_url`.
    pub open_wait: std::time::Duration,
}

impl fmt::Debug for HttpSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.fixed.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("HttpSettings")
            .field("headers", &names)
            .field("source", &self.source.is_some())
            .field("oauth", &self.oauth)
            .finish()
    }
}

impl HttpSettings {
    /// The extra headers of one request: the fixed ones, the source's,
    /// then the access token's.
    pub fn headers(&self) -> Vec<(String, String)> {
        let mut headers = self.fixed.clone();
        if let Some(source) = &self.source {
            headers.extend(source());
        }
        headers.extend(self.authorizer.as_ref().and_then(|a| a.header()));
        headers
    }
}

impl ClientBuilder {
    /// Sends `name: value` with every HTTP request (see
    /// [`connect_url`](ClientBuilder::connect_url)); ignored over stdio.
    /// A value with a line break is never sent.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.http.fixed.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Sends `Authorization: Bearer {token}` with every HTTP request.
    pub fn bearer_token(self, token: &str) -> Self {
        self.header("Authorization", &format!("Bearer {token}"))
    }

    /// Asks `source` for headers before every HTTP request (after the
    /// fixed ones): for credentials that change while the client lives.
    /// Runs on the thread that sends the request; keep it quick.
    pub fn header_source(
        mut self,
        source: impl Fn() -> Vec<(String, String)> + Send + Sync + 'static,
    ) -> Self {
        self.http.source = Some(Arc::new(source));
        self
    }

    /// Authorizes the client with OAuth 2.1 as MCP's authorization spec
    /// describes it, when a server asks (a `401` with `WWW-Authenticate`):
    /// see [`OAuth`]. The request the server refused waits for the
    /// authorization and is sent again once, with the new token; so is a
    /// request refused with `403` `insufficient_scope`, after an
    /// authorization for the scopes it needs as well as those granted
    /// before. Tokens come from and go to `oauth`'s [`TokenStore`](crate::TokenStore);
    /// none appears in an error, a note or what the wire hook sees.
    pub fn oauth(mut self, oauth: OAuth) -> Self {
        self.http.oauth = Some(oauth);
        self
    }

    /// Trusts the CA certificates in `pem` (PEM text, one certificate or
    /// more) for `https://` servers, besides the system's root
    /// certificates: for a server whose certificate a private CA signed.
    /// The OAuth authorization server's requests ([`oauth`](ClientBuilder::oauth))
    /// trust them too.
    /// The text is read when the client connects; text without a
    /// certificate fails [`connect_url`](ClientBuilder::connect_url).
    ///
    /// ```no_run
    /// let ca = std::fs::read("ca.pem")?;
    /// let client = mcp_stdio::Client::builder()
    ///     .add_ca_pem(&ca)
    ///     .connect_url("https://mcp.internal.example/mcp")?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "https")]
    #[cfg_attr(docsrs, doc(cfg(feature = "https")))]
    pub fn add_ca_pem(mut self, pem: &[u8]) -> Self {
        self.http.extra_cas.push(ExtraCa::Pem(pem.to_vec()));
        self
    }

    /// Trusts the CA certificates in the PEM file at `path`, as
    /// [`add_ca_pem`](ClientBuilder::add_ca_pem) does; the file is read
    /// when the client connects, and one that cannot be read fails
    /// [`connect_url`](ClientBuilder::connect_url), naming it.
    /// (`mcp-stdio --cacert FILE`.)
    #[cfg(feature = "https")]
    #[cfg_attr(docsrs, doc(cfg(feature = "https")))]
    pub fn add_ca_file(mut self, path: impl AsRef<std::path::Path>) -> Self {
        (self.http.extra_cas).push(ExtraCa::File(path.as_ref().to_owned()));
        self
    }

    /// Connects to a Streamable HTTP server at `url`: `http://host:port/path`,
    /// or `https://` with the `https` feature (without it an `https` URL
    /// is an error that names the feature).
    ///
    /// Over `https://` the server's certificate must be valid for the
    /// URL's host (a name, or an IP address the certificate names) and
    /// signed by a root certificate of the system (its store, or
    /// `SSL_CERT_FILE` / `SSL_CERT_DIR` when either is set) or one added
    /// with `add_ca_pem` or `add_ca_file` (feature `https`); a refused
    /// certificate is an error of one line naming the host and what to do.
    /// TLS 1.2 and 1.3 through rustls, with the same timeouts, kept-alive
    /// connections and cancellation as plain HTTP.
    ///
    /// The client then works as it does over stdio, with the same era
    /// probe, both eras, MRTR, tasks, subscriptions and cancellation.
    /// Every message is one POST on a kept-alive connection (one per
    /// request in flight; up to eight idle ones are kept), sent and read by
    /// threads the client keeps while there is work (no thread per
    /// request); an answer that streams (SSE) is read as it comes, until
    /// the request's answer. A notification or an answer the server does
    /// not accept within 10 s is given up, holding nothing else. A timeout
    /// or a cancellation closes the request's stream, which a modern
    /// server takes as the cancellation; a legacy server is also sent
    /// `notifications/cancelled`. A legacy server's session id
    /// (`Mcp-Session-Id`) is sent back on every request and ended with a
    /// `DELETE` by [`Client::close`]; when the server answers `404` for it
    /// (it forgot the session, or restarted), a new session is started with
    /// a new `initialize` and set up as the last one was (its log level,
    /// its resource subscriptions), and the request is sent again in it.
    ///
    /// Nothing is restarted: [`ClientBuilder::restart`] is for spawned
    /// servers. Each request opens a new connection when no idle one is
    /// left, so a server that went away and came back is reached again by
    /// the next request.
    ///
    /// ```no_run
    /// let client = mcp_stdio::Client::builder()
    ///     .bearer_token("secret")
    ///     .connect_url("http://127.0.0.1:8080/mcp")?;
    /// let result = client.call("echo", serde_json::json!({ "text": "hi" }))?;
    /// println!("{}", result.text_content());
    /// # Ok::<(), mcp_stdio::Error>(())
    /// ```
    pub fn connect_url(mut self, url: &str) -> Result<Client, Error> {
        self.settle_capabilities();
        self.http.connected = true;
        self.http.open_wait = super::get_stream::open_wait(self.probe_timeout, self.start_timeout);
        let endpoint = Endpoint::parse(url)?;
        if let Some(oauth) = self.http.oauth.clone() {
            // The authorization server is trusted as the MCP server is:
            // with the CAs added (`add_ca_pem`, `add_ca_file`) too.
            #[cfg(feature = "https")]
            let trust = Trust::new(self.http.extra_cas.clone());
            #[cfg(not(feature = "https"))]
            let trust = Trust::default();
            let trust = trust.for_server(url);
            let authorizer = Authorizer::new(oauth, url, trust).map_err(Error::Protocol)?;
            self.http.authorizer = Some(Arc::new(authorizer));
        }
        // For `https://` the root certificates are loaded now (the
        // system's and those added), so that a missing or unreadable one
        // fails here, at once.
        #[cfg(feature = "https")]
        let connector = match endpoint.tls {
            true => Connector::tls(super::tls::config(&self.http.extra_cas)?),
            false => Connector::plain(),
        };
        // Without the feature `Endpoint::parse` refused `https://`.
        #[cfg(not(feature = "https"))]
        let connector = Connector::plain();
        let (settings, max, notes) = (&self.http, self.max_line_bytes, self.notes.clone());
        let link = Link::start_carried(
            |inbox| super::open(endpoint, connector, settings, max, notes, inbox),
            self.max_line_bytes,
            self.notes.clone(),
            self.wire.clone(),
        );
        Client::start(self, link, None, None)
    }
}

impl Client {
    /// Connects to a Streamable HTTP server at `url` with default settings
    /// (see [`ClientBuilder::connect_url`]).
    pub fn connect_url(url: &str) -> Result<Client, Error> {
        ClientBuilder::default().connect_url(url)
    }
}

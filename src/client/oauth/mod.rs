//! OAuth 2.1 for the HTTP client, as MCP's authorization spec describes it
//! (2026-07-28 and 2025-11-25 `basic/authorization`): on a `401` the
//! client discovers the protected resource's metadata and its
//! authorization server's, registers (pre-registered credentials, a client
//! ID metadata document, or dynamic registration, in the spec's order),
//! runs the authorization code flow with PKCE (`S256`), `state` and the
//! `resource` indicator, exchanges the code, refreshes the token when it
//! runs out, and on a `403` `insufficient_scope` authorizes once more with
//! the union of the scopes (step-up). A machine client uses the client
//! credentials grant instead.
//!
//! The library never opens a browser and never writes a token anywhere by
//! itself: the application gives a callback that takes the user to the
//! authorization URL and returns the URL the authorization server
//! redirected to ([`OAuth::authorization_code`]), and a [`TokenStore`]
//! (in memory unless it gives one).
//!
//! ```text
//! POST ──► 401 + WWW-Authenticate ──► Authorizer::recover (one flow at a time)
//!   discover: resource metadata (resource checked) ──► AS metadata (issuer checked)
//!   register ──► authorize (callback: state, iss checked) ──► token ──► store
//! POST again with the new token (once)
//! ```

mod discover;
mod flow;
mod token;
pub(crate) mod web;

use std::fmt;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

pub(crate) use flow::Authorizer;

use crate::sync::lock;

/// The application's part of the authorization code flow: given the
/// authorization URL, take the user there and return the URL the
/// authorization server redirected the browser to (with `code` and
/// `state` in its query), or why not.
pub type AuthorizeFn = dyn Fn(&str) -> Result<String, String> + Send + Sync;

/// How an HTTP client gets its access tokens (see
/// [`ClientBuilder::oauth`](crate::ClientBuilder::oauth)).
///
/// ```no_run
/// use mcp_stdio::{Client, OAuth};
/// let oauth = OAuth::authorization_code("http://127.0.0.1:8976/callback", |url| {
///     println!("open {url} and paste the address you were sent to:");
///     let mut line = String::new();
///     std::io::stdin().read_line(&mut line).map_err(|e| e.to_string())?;
///     Ok(line.trim().to_owned())
/// })
/// .client_name("my tool");
/// let client = Client::builder().oauth(oauth).connect_url("http://127.0.0.1:8080/mcp")?;
/// # Ok::<(), mcp_stdio::Error>(())
/// ```
#[derive(Clone)]
pub struct OAuth {
    pub(crate) grant: Grant,
    pub(crate) client_name: String,
    pub(crate) pre_registered: Option<(String, Option<String>)>,
    /// The authorization server the pre-registered credentials belong to
    /// ([`OAuth::issuer`]).
    pub(crate) issuer: Option<String>,
    pub(crate) metadata_url: Option<String>,
    pub(crate) store: Arc<dyn TokenStore>,
}

/// How tokens are obtained.
#[derive(Clone)]
pub(crate) enum Grant {
    /// The authorization code flow, for a user: the redirect URI and the
    /// application's callback.
    Code {
        redirect_uri: String,
        authorize: Arc<AuthorizeFn>,
    },
    /// The client credentials grant, for a machine.
    Machine,
}

impl fmt::Debug for OAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let grant = match &self.grant {
            Grant::Code { redirect_uri, .. } => format!("authorization_code ({redirect_uri})"),
            Grant::Machine => "client_credentials".to_owned(),
        };
        f.debug_struct("OAuth")
            .field("grant", &grant)
            .field("client_name", &self.client_name)
            .field("client_id", &self.pre_registered.as_ref().map(|(id, _)| id))
            .field("issuer", &self.issuer)
            .field("metadata_url", &self.metadata_url)
            .finish_non_exhaustive()
    }
}

impl OAuth {
    /// The authorization code flow, for a user: `authorize` is called with
    /// the authorization URL and returns the URL the authorization server
    /// redirected to (whose `code`, `state` and `iss` the client checks and
    /// uses). `redirect_uri` is where the application receives that
    /// redirect: a loopback URL it listens on, say
    /// (`http://127.0.0.1:PORT/callback`).
    ///
    /// `authorize` runs on the thread whose request the server refused,
    /// and that request waits for it; it may block for as long as the
    /// user takes.
    pub fn authorization_code(
        redirect_uri: &str,
        authorize: impl Fn(&str) -> Result<String, String> + Send + Sync + 'static,
    ) -> OAuth {
        OAuth::with_grant(Grant::Code {
            redirect_uri: redirect_uri.to_owned(),
            authorize: Arc::new(authorize),
        })
    }

    /// The client credentials grant, for a machine acting on its own
    /// behalf, with the credentials its authorization server issued it
    /// (sent as HTTP Basic, or in the form when the server only takes
    /// that).
    pub fn client_credentials(client_id: &str, client_secret: &str) -> OAuth {
        OAuth::with_grant(Grant::Machine).pre_registered(client_id, Some(client_secret))
    }

    fn with_grant(grant: Grant) -> OAuth {
        OAuth {
            grant,
            client_name: "mcp-stdio".to_owned(),
            pre_registered: None,
            issuer: None,
            metadata_url: None,
            store: Arc::new(MemoryTokenStore::default()),
        }
    }

    /// The name dynamic registration gives the client (default
    /// `mcp-stdio`).
    pub fn client_name(mut self, name: &str) -> Self {
        name.clone_into(&mut self.client_name);
        self
    }

    /// Credentials registered with the authorization server beforehand:
    /// used first, whatever the server offers (spec: "Use pre-registered
    /// client information for the server if the client has it
    /// available"). With a secret, the client authenticates at the token
    /// endpoint (HTTP Basic, or the form when the server only takes that);
    /// without, it is a public client.
    pub fn pre_registered(mut self, client_id: &str, client_secret: Option<&str>) -> Self {
        self.pre_registered = Some((client_id.to_owned(), client_secret.map(str::to_owned)));
        self
    }

    /// The authorization server the pre-registered credentials
    /// ([`OAuth::pre_registered`], [`OAuth::client_credentials`]) were
    /// issued by, as its metadata's `issuer` says it: they are used with no
    /// other (spec 2026-07-28 client-registration, "Authorization Server
    /// Binding"). A server whose resource names another gets an error that
    /// names both, and the secret never goes there. Without it, the
    /// credentials are bound to the authorization server they were first
    /// used with, as far as the token store remembers.
    pub fn issuer(mut self, issuer: &str) -> Self {
        self.issuer = Some(issuer.to_owned());
        self
    }

    /// The HTTPS URL of the client's metadata document (a client ID
    /// metadata document): used as the client ID with an authorization
    /// server that says it supports them, before dynamic registration.
    pub fn client_metadata_url(mut self, url: &str) -> Self {
        self.metadata_url = Some(url.to_owned());
        self
    }

    /// Where tokens are kept between runs (default: in memory, for the
    /// client's life).
    pub fn token_store(mut self, store: impl TokenStore + 'static) -> Self {
        self.store = Arc::new(store);
        self
    }
}

/// What authorization leaves for the next request and the next run: the
/// access token and what renews it, and the client registration they were
/// issued to, bound to the authorization server that issued them. A new
/// registration is kept before the user authorizes, without a token (an
/// authorization not completed then costs no registration the next time).
///
/// Its `Debug` shows no token or secret.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    /// The access token, sent as `Authorization: Bearer`; empty when only
    /// the registration is kept.
    pub access_token: String,
    /// The refresh token, if the server issued one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires, in seconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The scopes asked for (space-separated), kept for a step-up's
    /// union.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The resource the token is for (RFC 8707).
    #[serde(default)]
    pub resource: String,
    /// The authorization server that issued it (its `issuer`).
    #[serde(default)]
    pub issuer: String,
    /// The client ID the token was issued to.
    #[serde(default)]
    pub client_id: String,
    /// The client secret, if the registration has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// How the client authenticates at the token endpoint
    /// (`client_secret_basic`, `client_secret_post` or `none`).
    #[serde(default)]
    pub token_endpoint_auth_method: String,
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokens")
            .field("access_token", &"(hidden)")
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| "(hidden)"),
            )
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .field("resource", &self.resource)
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "(hidden)"),
            )
            .field(
                "token_endpoint_auth_method",
                &self.token_endpoint_auth_method,
            )
            .finish()
    }
}

/// Where an HTTP client keeps its [`Tokens`]: read when the client
/// starts, written after every change. The library writes tokens nowhere
/// else.
pub trait TokenStore: Send + Sync {
    /// The tokens kept, if any.
    fn load(&self) -> Option<Tokens>;
    /// Keeps `tokens`, or forgets them (`None`).
    fn save(&self, tokens: Option<&Tokens>);
}

/// The default [`TokenStore`]: in memory, for the life of the client.
#[derive(Default)]
pub struct MemoryTokenStore(Mutex<Option<Tokens>>);

impl fmt::Debug for MemoryTokenStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MemoryTokenStore")
    }
}

impl TokenStore for MemoryTokenStore {
    fn load(&self) -> Option<Tokens> {
        lock(&self.0).clone()
    }

    fn save(&self, tokens: Option<&Tokens>) {
        *lock(&self.0) = tokens.cloned();
    }
}

//! The authorization itself: `Authorizer`, one per HTTP client. It gives
//! every request its `Authorization` header (`header`) and, when the
//! server refuses one (`recover`), obtains a new token: by refreshing,
//! or by the whole flow (discovery, registration, the authorization code
//! with PKCE, or the client credentials grant). One flow runs at a time;
//! a request refused while another obtained a new token only tries again.
//!
//! The files, by job: this one holds what a request sees (the token in
//! use, a refused one recovered: refreshed or obtained anew);
//! `grant.rs` obtains a token from the authorization server (the whole
//! flow, the authorization code with PKCE, a refresh) and `register.rs`
//! the client's registration with it (and the count of those refused).

mod grant;
mod register;

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::discover::{self, Challenge, ServerMetadata};
use super::token::{self, NoToken};
use super::web::{Trust, Url};
use super::{Grant, OAuth, Tokens};
use crate::sync::lock;

/// A token refused within this long of being obtained was refused "at
/// once" ([`MAX_REFUSED_AT_ONCE`]).
const AT_ONCE: Duration = Duration::from_secs(30);

/// How many tokens in a row a server may refuse at once before the client
/// stops authorizing (spec 2026-07-28 basic/authorization, "Step-Up
/// Authorization Flow": clients SHOULD implement retry limits).
const MAX_REFUSED_AT_ONCE: u32 = 3;

/// How many of the client's registrations (new or given) the
/// authorization servers may refuse (`invalid_client`) in a row, with no
/// token obtained between them, before the client stops registering: each
/// costs the user an authorization (spec 2026-07-28 basic/authorization:
/// clients SHOULD implement retry limits). Counted for the one MCP server,
/// whatever issuer its metadata names (a server that names a new one each
/// time is no way around it); a token obtained starts the count again (an
/// authorization server that lets registrations expire is not locked out).
const MAX_BAD_CLIENTS: u32 = 3;

/// The authorization of one HTTP client.
pub(crate) struct Authorizer {
    config: OAuth,
    /// The MCP endpoint.
    server: Url,
    /// What the authorization's `https://` requests trust: the client's.
    trust: Trust,
    /// The tokens in use (and their registration), as the store has them.
    tokens: Mutex<Option<Tokens>>,
    /// Held while a new token is obtained: one flow at a time.
    flow: Mutex<()>,
    /// How many requests wait in `recover`.
    waiting: AtomicUsize,
    /// When the token in use was obtained, and how many tokens in a row
    /// the server refused within [`AT_ONCE`] of it.
    issued: Mutex<(Option<Instant>, u32)>,
    /// Whether the token in use came from a refresh: refused at once
    /// (within [`AT_ONCE`], before it ran out), it is not refreshed again
    /// but obtained anew.
    refreshed: Mutex<bool>,
    /// How many registrations in a row the token endpoints refused
    /// (`invalid_client`) since a token last came, with the last refusal:
    /// its issuer and answer.
    bad_clients: Mutex<(u32, String)>,
}

impl std::fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorizer")
            .field("config", &self.config)
            .field("server", &self.server.to_string())
            .finish_non_exhaustive()
    }
}

impl Authorizer {
    /// The authorization of a client of the MCP endpoint `server`, with
    /// the tokens the store kept (if they are for this server), its
    /// requests trusting what the client's do (`trust`).
    pub fn new(config: OAuth, server: &str, trust: Trust) -> Result<Authorizer, String> {
        let server = Url::parse(server)?;
        if let Grant::Code { redirect_uri, .. } = &config.grant {
            check_redirect_uri(redirect_uri)?;
        }
        // A token kept for a server in clear text off this machine (kept
        // before such servers were refused, or by the application's
        // store) is not sent there either (RFC 6750 section 5.3; the
        // flow obtains none for it, `discover::resource_metadata`).
        // A token is kept for the `resource` the discovery took
        // (`names_server`): one identical to the server's URL (with its
        // query, as the server's), or a segment-wise prefix of it.
        let in_clear = server.scheme != "https" && !server.is_loopback();
        let kept = (config.store.load()).filter(|t| {
            !in_clear
                && (discover::identical(&t.resource, &server)
                    || discover::resource_matches(&t.resource, &server))
        });
        Ok(Authorizer {
            config,
            server,
            trust,
            tokens: Mutex::new(kept),
            flow: Mutex::new(()),
            refreshed: Mutex::new(false),
            waiting: AtomicUsize::new(0),
            issued: Mutex::new((None, 0)),
            bad_clients: Mutex::new((0, String::new())),
        })
    }

    /// The `Authorization` header of the next request, once there is a
    /// token.
    pub fn header(&self) -> Option<(String, String)> {
        let tokens = lock(&self.tokens);
        let token = &tokens.as_ref()?.access_token;
        (!token.is_empty()).then(|| ("Authorization".to_owned(), format!("Bearer {token}")))
    }

    /// Obtains a new token after the server refused a request with
    /// `status` (`401`, or `403` with `insufficient_scope`) and the
    /// `WWW-Authenticate` fields `challenges`, the request having carried
    /// `sent` (its `Authorization` value). `Ok`: try the request again,
    /// once. `Err` says why not, in one line that names no token.
    pub fn recover(
        &self,
        status: u16,
        challenges: &[&str],
        sent: Option<&str>,
    ) -> Result<(), String> {
        /// Counts a request among those waiting while it lives, however
        /// it ends (a panicking callback included).
        struct Waiting<'a>(&'a AtomicUsize);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::AcqRel);
            }
        }
        self.waiting.fetch_add(1, Ordering::AcqRel);
        let _waiting = Waiting(&self.waiting);
        self.recover_waiting(status, challenges, sent)
    }

    /// As [`Authorizer::recover`], but never sends the user to authorize:
    /// a refused `sent` is refreshed, or `Err`, and a failure forgets
    /// nothing (the token may still be good for other requests). For a
    /// request the user did not ask for (a legacy server's GET stream),
    /// which must not open a browser the POSTs do not need.
    pub fn refresh_for(
        &self,
        status: u16,
        challenges: &[&str],
        sent: Option<&str>,
    ) -> Result<(), String> {
        let _flow = lock(&self.flow);
        if self.renewed_since(sent) {
            return Ok(());
        }
        if status != 401 {
            return Err("the server wants another scope, which only the user may grant".into());
        }
        let old = lock(&self.tokens).clone();
        let Some(old) = old.filter(|t| t.refresh_token.is_some()) else {
            return Err("no refresh token, and only the user may authorize again".into());
        };
        let challenge = Challenge::parse(challenges.iter().copied());
        let resource = discover::resource_metadata(&self.trust, &self.server, &challenge)?;
        if old.issuer != resource.authorization_servers[0] {
            return Err(
                "the server names another authorization server: only the user may authorize there"
                    .into(),
            );
        }
        let tokens = self.refresh(&old).map_err(|no| no.why)?;
        self.keep(Some(tokens));
        *lock(&self.refreshed) = true;
        Ok(())
    }

    /// Whether another request obtained a new token since `sent` (the
    /// `Authorization` value a refused request carried) was in use: the
    /// refused request only needs to be sent again.
    fn renewed_since(&self, sent: Option<&str>) -> bool {
        let current = self.header().map(|(_, value)| value);
        current.is_some() && current.as_deref() != sent
    }

    /// Whether a request waits for a new token (the user may be
    /// authorizing): the era probe waits as long as it does.
    pub fn is_authorizing(&self) -> bool {
        self.waiting.load(Ordering::Acquire) > 0
    }

    fn recover_waiting(
        &self,
        status: u16,
        challenges: &[&str],
        sent: Option<&str>,
    ) -> Result<(), String> {
        let _flow = lock(&self.flow);
        if self.renewed_since(sent) {
            return Ok(());
        }
        // A server that refuses every token it is given (one issued for
        // another audience, say) would have the user authorize again for
        // every request: after three refused at once, no more.
        {
            let mut issued = lock(&self.issued);
            let at_once = issued.0.is_some_and(|at| at.elapsed() < AT_ONCE);
            issued.1 = if at_once { issued.1 + 1 } else { 0 };
            if issued.1 >= MAX_REFUSED_AT_ONCE {
                return Err(format!(
                    "the server refused the last {MAX_REFUSED_AT_ONCE} tokens as soon as they were obtained: not authorizing again"
                ));
            }
        }
        let challenge = Challenge::parse(challenges.iter().copied());
        if status == 403 && !challenge.insufficient_scope() {
            return Err(
                "the server refused the request (403) for a reason other than its scope".into(),
            );
        }
        let previous = lock(&self.tokens).clone();
        let res = self.obtain(status, &challenge, previous.as_ref());
        // An access token still in use after a failure is the refused one
        // (only a success keeps a new one).
        let still = lock(&self.tokens).clone();
        if let (Err(_), 401, Some(mut refused)) = (&res, status, still)
            && !refused.access_token.is_empty()
        {
            // The access token was refused and no new one came: it is
            // forgotten; the refresh token and the registration are kept
            // for the next try (an authorization server that was down, say).
            refused.access_token.clear();
            self.keep(Some(refused));
        }
        res
    }

    /// A new token, after a refusal with `status` and `challenge` of the
    /// token `previous` (if any): refreshed, or obtained anew.
    fn obtain(
        &self,
        status: u16,
        challenge: &Challenge,
        previous: Option<&Tokens>,
    ) -> Result<(), String> {
        let resource = discover::resource_metadata(&self.trust, &self.server, challenge)?;
        // A 401 for a token that can be refreshed, from the server the
        // resource still names: the refresh first, unless the token
        // refused came from a refresh itself and was refused at once,
        // before it ran out (a refresh again would bring one as bad). One
        // refused once it expired, or long after it came, ran its course:
        // it is refreshed as the first was.
        let from_refresh = std::mem::take(&mut *lock(&self.refreshed));
        let at_once = lock(&self.issued)
            .0
            .is_some_and(|at| at.elapsed() < AT_ONCE);
        let ran_out = (previous.and_then(|t| t.expires_at)).is_some_and(|at| at <= token::now());
        let mut previous = previous;
        if status == 401
            && !(from_refresh && at_once && !ran_out)
            && let Some(old) = previous.filter(|t| {
                t.refresh_token.is_some() && t.issuer == resource.authorization_servers[0]
            })
        {
            match self.refresh(old) {
                Ok(tokens) => {
                    self.keep(Some(tokens));
                    *lock(&self.refreshed) = true;
                    return Ok(());
                }
                // The registration itself is refused: it and what was
                // issued to it are forgotten, and the flow registers anew.
                Err(NoToken {
                    bad_client: true,
                    why,
                }) => {
                    self.bad_client(&old.issuer, why);
                    self.keep(None);
                    previous = None;
                }
                Err(_) => {}
            }
        }
        self.authorize(challenge, resource, previous)
    }

    /// Keeps `tokens` as the ones in use, and in the store.
    fn keep(&self, tokens: Option<Tokens>) {
        lock(&self.issued).0 = tokens.as_ref().map(|_| Instant::now());
        // A token came: the registrations refused before it are behind.
        if tokens.as_ref().is_some_and(|t| !t.access_token.is_empty()) {
            lock(&self.bad_clients).0 = 0;
        }
        self.config.store.save(tokens.as_ref());
        *lock(&self.tokens) = tokens;
    }
}

/// The scopes to ask for (spec 2026-07-28 basic/authorization, "Scope
/// Selection Strategy" and "Step-Up Authorization Flow"): the challenge's,
/// else the resource's `scopes_supported`, else none; joined with the
/// scopes asked for before (a step-up keeps what was granted); with
/// `offline_access` when the authorization server lists it (spec "Refresh
/// Tokens": MAY, for a refresh token).
fn choose_scope(
    challenge: &Challenge,
    supported: Option<&[String]>,
    previous: Option<&Tokens>,
    metadata: &ServerMetadata,
) -> Option<String> {
    let mut wanted: Vec<&str> = Vec::new();
    if let Some(before) = previous.and_then(|t| t.scope.as_deref()) {
        wanted.extend(before.split(' '));
    }
    match (&challenge.scope, supported) {
        (Some(scope), _) => wanted.extend(scope.split(' ')),
        (None, Some(supported)) => wanted.extend(supported.iter().map(String::as_str)),
        (None, None) => {}
    }
    let offline = (metadata.scopes_supported.iter().flatten()).any(|s| s == "offline_access");
    if offline && !wanted.is_empty() {
        wanted.push("offline_access");
    }
    let mut seen = BTreeSet::new();
    wanted.retain(|scope| !scope.is_empty() && seen.insert(*scope));
    (!wanted.is_empty()).then(|| wanted.join(" "))
}

/// Spec 2026-07-28 security-considerations: "All redirect URIs MUST be
/// either `localhost` or use HTTPS": an `http://` URI must name this
/// machine by its spelling (`localhost`, a loopback address: the browser
/// resolves it, not this process).
fn check_redirect_uri(redirect_uri: &str) -> Result<(), String> {
    let fits =
        Url::parse(redirect_uri).is_ok_and(|url| url.scheme == "https" || url.spelled_local());
    if fits {
        return Ok(());
    }
    Err(format!(
        "the redirect URI {redirect_uri} is neither https:// nor http:// on this machine (localhost, 127.0.0.1, [::1]): give one that is (OAuth::authorization_code)"
    ))
}

#[cfg(test)]
mod tests;

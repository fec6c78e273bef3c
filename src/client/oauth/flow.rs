//! The authorization itself: `Authorizer`, one per HTTP client. It gives
//! every request its `Authorization` header (`header`) and, when the
//! server refuses one (`recover`), obtains a new token: by refreshing,
//! or by the whole flow (discovery, registration, the authorization code
//! with PKCE, or the client credentials grant). One flow runs at a time;
//! a request refused while another obtained a new token only tries again.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::discover::{self, Challenge, ResourceMetadata, ServerMetadata};
use super::token::{
    NoToken, Registration, TokenAnswer, base64url, expires_at, json_headers, oauth_error,
    random_text, token_request,
};
use super::web::{Trust, Url, fetch};
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
    /// Whether the token in use came from a refresh: refused, it is not
    /// refreshed again but obtained anew.
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
        let kept =
            (config.store.load()).filter(|t| discover::resource_matches(&t.resource, &server));
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
        // refused came from a refresh itself.
        let from_refresh = std::mem::take(&mut *lock(&self.refreshed));
        let mut previous = previous;
        if status == 401
            && !from_refresh
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

    /// Keeps a new `registration` with the authorization server `issuer`
    /// for `resource`, without a token yet, in place of what was kept
    /// (issued to another client, or by another server): an authorization
    /// the user does not complete (a closed browser, no one at the
    /// terminal) then costs no registration the next time. It is kept
    /// until it is known bad ([`NoToken::bad_client`]). Not a token, so
    /// the count of tokens refused at once is not touched.
    fn keep_registration(&self, registration: &Registration, issuer: &str, resource: &str) {
        let kept = Tokens {
            resource: resource.to_owned(),
            issuer: issuer.to_owned(),
            client_id: registration.client_id.clone(),
            client_secret: registration.client_secret.clone(),
            token_endpoint_auth_method: registration.method.clone(),
            ..Tokens::default()
        };
        self.config.store.save(Some(&kept));
        *lock(&self.tokens) = Some(kept);
    }

    /// Counts a registration `issuer`'s token endpoint refused
    /// (`invalid_client`), with its answer `why`.
    fn bad_client(&self, issuer: &str, why: String) {
        let mut bad = lock(&self.bad_clients);
        *bad = (bad.0.saturating_add(1), format!("{issuer} answered {why}"));
    }

    /// Whether the client may register again: not once
    /// [`MAX_BAD_CLIENTS`] registrations in a row were refused. An
    /// authorization server that knows no client (one that forgets every
    /// registration, or refuses the client ID given) would otherwise have
    /// the user authorize again for every request, without end.
    fn may_register(&self) -> Result<(), String> {
        match &*lock(&self.bad_clients) {
            (count, last) if *count >= MAX_BAD_CLIENTS => Err(format!(
                "the authorization servers refused {count} registrations of this client in a row (the last: {last}): not registering again; check the client's registration there (or the client ID given), then connect again"
            )),
            _ => Ok(()),
        }
    }

    /// The whole flow: discovery, registration, a token.
    fn authorize(
        &self,
        challenge: &Challenge,
        resource: ResourceMetadata,
        previous: Option<&Tokens>,
    ) -> Result<(), String> {
        // RFC 9728 section 7.6: the client chooses; the first listed.
        let issuer = &resource.authorization_servers[0];
        let metadata = discover::server_metadata(&self.trust, issuer, &self.server)?;
        // Spec 2026-07-28 client-registration, "Authorization Server
        // Binding": credentials from another authorization server are
        // never reused.
        let previous = previous.filter(|t| t.issuer == metadata.issuer);
        let scope = choose_scope(
            challenge,
            resource.scopes_supported.as_deref(),
            previous,
            &metadata,
        );
        // The registration kept (with tokens or alone), unless the
        // application now gives another client ID; a new one is kept at
        // once, before the user is asked anything.
        let given = self.config.pre_registered.as_ref().map(|(id, _)| id);
        let registration = match previous {
            Some(t) if !t.client_id.is_empty() && given.is_none_or(|id| *id == t.client_id) => {
                Registration {
                    client_id: t.client_id.clone(),
                    client_secret: t.client_secret.clone(),
                    method: t.token_endpoint_auth_method.clone(),
                }
            }
            _ => {
                self.may_register()?;
                let registration = self.register(&metadata)?;
                self.keep_registration(&registration, &metadata.issuer, &resource.resource);
                registration
            }
        };
        let token = match &self.config.grant {
            Grant::Code {
                redirect_uri,
                authorize,
            } => self.code_flow(
                &metadata,
                &registration,
                &resource.resource,
                scope.as_deref(),
                redirect_uri,
                &**authorize,
            ),
            Grant::Machine => {
                let mut pairs = vec![
                    ("grant_type", "client_credentials"),
                    ("resource", resource.resource.as_str()),
                ];
                if let Some(scope) = &scope {
                    pairs.push(("scope", scope));
                }
                token_request(&self.trust, &metadata, &registration, &mut pairs)
            }
        };
        let token = match token {
            Ok(token) => token,
            Err(no) => {
                // A registration known bad is forgotten, with what was
                // issued to it: the next authorization registers anew.
                if no.bad_client {
                    self.bad_client(&metadata.issuer, no.why.clone());
                    self.keep(None);
                }
                return Err(no.why);
            }
        };
        let tokens = Tokens {
            access_token: token.access_token,
            refresh_token: token.refresh_token,
            expires_at: expires_at(token.expires_in),
            scope,
            resource: resource.resource,
            issuer: metadata.issuer,
            client_id: registration.client_id,
            client_secret: registration.client_secret,
            token_endpoint_auth_method: registration.method,
        };
        self.keep(Some(tokens));
        Ok(())
    }

    /// The client's registration with the authorization server: the
    /// pre-registered one, else a client ID metadata document if the server
    /// supports them, else dynamic registration (spec 2026-07-28
    /// client-registration, in its order of preference).
    fn register(&self, metadata: &ServerMetadata) -> Result<Registration, String> {
        let methods = metadata.token_endpoint_auth_methods_supported.as_deref();
        if let Some((client_id, client_secret)) = &self.config.pre_registered {
            let method = match client_secret {
                None => "none",
                // RFC 8414: client_secret_basic when the server lists none.
                Some(_) if methods.is_none_or(|m| m.iter().any(|m| m == "client_secret_basic")) => {
                    "client_secret_basic"
                }
                Some(_) => "client_secret_post",
            };
            return Ok(Registration {
                client_id: client_id.clone(),
                client_secret: client_secret.clone(),
                method: method.to_owned(),
            });
        }
        if let (Some(url), true) = (
            &self.config.metadata_url,
            metadata.client_id_metadata_document_supported,
        ) {
            return Ok(Registration {
                client_id: url.clone(),
                client_secret: None,
                method: "none".to_owned(),
            });
        }
        let Some(endpoint) = &metadata.registration_endpoint else {
            return Err(format!(
                "the authorization server {} offers no registration and the client has no client ID: give one (OAuth::pre_registered)",
                metadata.issuer
            ));
        };
        let redirect_uris: Vec<&str> = match &self.config.grant {
            Grant::Code { redirect_uri, .. } => vec![redirect_uri],
            Grant::Machine => Vec::new(),
        };
        // A public client where the server takes one (an application on
        // the user's machine keeps no secret); else a secret, sent as the
        // server prefers.
        let wanted = match methods {
            Some(m) if m.iter().any(|m| m == "none") => "none",
            Some(m)
                if !m.iter().any(|m| m == "client_secret_basic")
                    && m.iter().any(|m| m == "client_secret_post") =>
            {
                "client_secret_post"
            }
            _ => "client_secret_basic",
        };
        // Spec 2026-07-28 client-registration: `application_type` is
        // required; "native" for a CLI or desktop application. Spec
        // "Refresh Tokens": `refresh_token` among the grant types.
        let body = serde_json::json!({
            "client_name": self.config.client_name,
            "redirect_uris": redirect_uris,
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": wanted,
            "application_type": "native",
        });
        let url = Url::parse(endpoint)?;
        let answer = fetch(
            &self.trust,
            "POST",
            &url,
            &json_headers(),
            body.to_string().as_bytes(),
        )?;
        if !(200..300).contains(&answer.status) {
            return Err(format!(
                "dynamic registration at {url} was refused ({}){}",
                answer.status,
                oauth_error(&answer.body)
            ));
        }
        #[derive(Deserialize)]
        struct Registered {
            client_id: String,
            client_secret: Option<String>,
            token_endpoint_auth_method: Option<String>,
        }
        let registered: Registered = serde_json::from_slice(&answer.body)
            .map_err(|e| format!("the registration answer from {url} is not valid: {e}"))?;
        let method = registered.token_endpoint_auth_method.unwrap_or_else(|| {
            match registered.client_secret {
                Some(_) if wanted == "none" => "client_secret_basic".to_owned(),
                Some(_) => wanted.to_owned(),
                None => "none".to_owned(),
            }
        });
        Ok(Registration {
            client_id: registered.client_id,
            client_secret: registered.client_secret,
            method,
        })
    }

    /// The authorization code flow with PKCE (`S256`), `state` and
    /// `resource`: the application's callback takes the user to the
    /// authorization URL and hands back the redirect, whose `state` and
    /// `iss` are checked before the code goes to the token endpoint.
    #[allow(
        clippy::too_many_arguments,
        reason = "the flow's inputs, each used once"
    )]
    fn code_flow(
        &self,
        metadata: &ServerMetadata,
        registration: &Registration,
        resource: &str,
        scope: Option<&str>,
        redirect_uri: &str,
        authorize: &super::AuthorizeFn,
    ) -> Result<TokenAnswer, NoToken> {
        let endpoint = metadata.authorization_endpoint.as_deref().ok_or_else(|| {
            format!(
                "the authorization server {} has no authorization endpoint",
                metadata.issuer
            )
        })?;
        let endpoint = Url::parse(endpoint)?;
        // Spec 2026-07-28 basic/authorization, "Authorization Code
        // Protection": PKCE is required, and a server whose metadata does
        // not list S256 is not used.
        let s256 =
            (metadata.code_challenge_methods_supported.iter().flatten()).any(|m| m == "S256");
        if !s256 {
            return Err(format!(
                "the authorization server {} does not offer PKCE with S256 (code_challenge_methods_supported): refused",
                metadata.issuer
            )
            .into());
        }
        let verifier = random_text()?;
        let state = random_text()?;
        let challenge = base64url(&Sha256::digest(verifier.as_bytes()));
        let mut pairs = vec![
            ("response_type", "code"),
            ("client_id", registration.client_id.as_str()),
            ("redirect_uri", redirect_uri),
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("state", state.as_str()),
            ("resource", resource),
        ];
        if let Some(scope) = scope {
            pairs.push(("scope", scope));
        }
        let url = endpoint.with_query(&pairs);
        // The application's callback: a panic in it fails this
        // authorization, not the client's thread.
        let redirected = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| authorize(&url)))
            .map_err(|_| "the authorization callback panicked".to_owned())?
            .map_err(|e| format!("the authorization was not completed: {e}"))?;
        let redirected = Url::parse(redirected.trim())
            .map_err(|_| "the authorization's redirect is not a URL".to_owned())?;
        // Spec 2026-07-28 basic/authorization, "Authorization Response
        // Validation" (RFC 9207 section 2.4): a present `iss` is compared
        // with the recorded issuer by simple string comparison; an absent
        // one is refused when the server said it sends it. Before anything
        // else of the response is acted on, its error included.
        match redirected.query_param("iss") {
            Some(iss) if iss != metadata.issuer => {
                return Err(format!(
                    "the authorization response names the issuer '{iss}', not '{}': refused",
                    metadata.issuer
                )
                .into());
            }
            None if metadata.authorization_response_iss_parameter_supported => {
                return Err(format!(
                    "the authorization response has no iss, which {} said it sends: refused",
                    metadata.issuer
                )
                .into());
            }
            _ => {}
        }
        if redirected.query_count("state") != 1
            || redirected.query_param("state").as_deref() != Some(state.as_str())
        {
            return Err("the authorization response's state is not the one sent: refused".into());
        }
        if let Some(error) = redirected.query_param("error") {
            let description = redirected
                .query_param("error_description")
                .unwrap_or_default();
            return Err(
                format!("the authorization server refused: {error} {description}")
                    .trim_end()
                    .into(),
            );
        }
        let code = redirected
            .query_param("code")
            .filter(|c| !c.is_empty())
            .ok_or("the authorization response has no code")?;
        let mut pairs = vec![
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", redirect_uri),
            ("code_verifier", verifier.as_str()),
            ("resource", resource),
        ];
        token_request(&self.trust, metadata, registration, &mut pairs)
    }

    /// A new access token for `old`'s refresh token, from the server that
    /// issued it.
    fn refresh(&self, old: &Tokens) -> Result<Tokens, NoToken> {
        let metadata = discover::server_metadata(&self.trust, &old.issuer, &self.server)?;
        let registration = Registration {
            client_id: old.client_id.clone(),
            client_secret: old.client_secret.clone(),
            method: old.token_endpoint_auth_method.clone(),
        };
        let refresh_token = old.refresh_token.clone().unwrap_or_default();
        let mut pairs = vec![
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token.as_str()),
            ("resource", old.resource.as_str()),
        ];
        let token = token_request(&self.trust, &metadata, &registration, &mut pairs)?;
        Ok(Tokens {
            access_token: token.access_token,
            // RFC 6749 section 6: a new refresh token replaces the old.
            refresh_token: token.refresh_token.or_else(|| old.refresh_token.clone()),
            expires_at: expires_at(token.expires_in),
            ..old.clone()
        })
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

#[cfg(test)]
mod tests;

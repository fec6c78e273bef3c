use sha2::{Digest, Sha256};

use super::{Authorizer, choose_scope};
use crate::client::oauth::discover::{self, Challenge, ResourceMetadata, ServerMetadata};
use crate::client::oauth::token::{
    NoToken, Registration, TokenAnswer, base64url, expires_at, random_text, token_request,
};
use crate::client::oauth::web::Url;
use crate::client::oauth::{AuthorizeFn, Grant, Tokens};

impl Authorizer {
    /// The whole flow: discovery, registration, a token.
    pub(super) fn authorize(
        &self,
        challenge: &Challenge,
        resource: ResourceMetadata,
        previous: Option<&Tokens>,
    ) -> Result<(), String> {
        // RFC 9728 section 7.6: the client chooses; the first listed.
        let issuer = &resource.authorization_servers[0];
        let metadata = discover::server_metadata(&self.trust, issuer, &self.server)?;
        // Spec 2026-07-28 client-registration, "Authorization Server
        // Binding": pre-registered credentials are the authorization
        // server's they were used with (the kept tokens' issuer); when
        // the resource names another, an error (SHOULD), and the secret
        // never goes there.
        if let (Some(_), Some(bound)) = (&self.config.pre_registered, &self.config.issuer)
            && *bound != metadata.issuer
        {
            return Err(format!(
                "the server names the authorization server {}, and this client's credentials are {}'s: not using them there (OAuth::issuer)",
                metadata.issuer, bound
            ));
        }
        if let (Some((id, _)), Some(kept)) = (&self.config.pre_registered, previous)
            && kept.client_id == *id
            && !kept.issuer.is_empty()
            && kept.issuer != metadata.issuer
        {
            return Err(format!(
                "the server now names the authorization server {}, not {}, where this client's credentials were used: not using them there (give this client's credentials for the new one, or forget the tokens kept for the old one if these are valid there too)",
                metadata.issuer, kept.issuer
            ));
        }
        // Credentials from another authorization server are never reused.
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
        authorize: &AuthorizeFn,
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
    pub(super) fn refresh(&self, old: &Tokens) -> Result<Tokens, NoToken> {
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

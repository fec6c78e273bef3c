use serde::Deserialize;

use super::{Authorizer, MAX_BAD_CLIENTS};
use crate::client::oauth::discover::ServerMetadata;
use crate::client::oauth::token::{Registration, json_headers, oauth_error};
use crate::client::oauth::web::{Url, fetch};
use crate::client::oauth::{Grant, Tokens};
use crate::sync::lock;

impl Authorizer {
    /// Keeps a new `registration` with the authorization server `issuer`
    /// for `resource`, without a token yet, in place of what was kept
    /// (issued to another client, or by another server): an authorization
    /// the user does not complete (a closed browser, no one at the
    /// terminal) then costs no registration the next time. It is kept
    /// until it is known bad ([`NoToken::bad_client`]). Not a token, so
    /// the count of tokens refused at once is not touched.
    pub(super) fn keep_registration(
        &self,
        registration: &Registration,
        issuer: &str,
        resource: &str,
    ) {
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
    pub(super) fn bad_client(&self, issuer: &str, why: String) {
        let mut bad = lock(&self.bad_clients);
        *bad = (bad.0.saturating_add(1), format!("{issuer} answered {why}"));
    }

    /// Whether the client may register again: not once
    /// [`MAX_BAD_CLIENTS`] registrations in a row were refused. An
    /// authorization server that knows no client (one that forgets every
    /// registration, or refuses the client ID given) would otherwise have
    /// the user authorize again for every request, without end.
    pub(super) fn may_register(&self) -> Result<(), String> {
        match &*lock(&self.bad_clients) {
            (count, last) if *count >= MAX_BAD_CLIENTS => Err(format!(
                "the authorization servers refused {count} registrations of this client in a row (the last: {last}): not registering again; check the client's registration there (or the client ID given), then connect again"
            )),
            _ => Ok(()),
        }
    }

    /// The client's registration with the authorization server: the
    /// pre-registered one, else a client ID metadata document if the server
    /// supports them, else dynamic registration (spec 2026-07-28
    /// client-registration, in its order of preference).
    pub(super) fn register(&self, metadata: &ServerMetadata) -> Result<Registration, String> {
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
}

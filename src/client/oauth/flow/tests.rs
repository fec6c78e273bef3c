use sha2::{Digest, Sha256};

use super::*;
use crate::client::oauth::token::{base64url, random_text};

#[test]
fn pkce_challenges_are_rfc_7636s() {
    // RFC 7636 appendix B.
    let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    assert_eq!(
        base64url(&Sha256::digest(verifier.as_bytes())),
        "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    );
    let (a, b) = (random_text().unwrap(), random_text().unwrap());
    assert_eq!(a.len(), 43);
    assert_ne!(a, b);
}

fn metadata(scopes: Option<Vec<&str>>) -> ServerMetadata {
    serde_json::from_value(serde_json::json!({
        "issuer": "http://a", "token_endpoint": "http://a/token",
        "scopes_supported": scopes,
    }))
    .unwrap()
}

#[test]
fn scopes_follow_the_spec_order_and_a_step_up_keeps_the_old_ones() {
    let supported = vec!["mcp:read".to_owned(), "mcp:write".to_owned()];
    let challenge = Challenge {
        scope: Some("mcp:basic".into()),
        ..Challenge::default()
    };
    let m = metadata(None);
    assert_eq!(
        choose_scope(&challenge, Some(&supported), None, &m).as_deref(),
        Some("mcp:basic")
    );
    let none = Challenge::default();
    assert_eq!(
        choose_scope(&none, Some(&supported), None, &m).as_deref(),
        Some("mcp:read mcp:write")
    );
    assert_eq!(choose_scope(&none, None, None, &m), None);
    let before = Tokens {
        scope: Some("mcp:basic".into()),
        ..Tokens::default()
    };
    let step_up = Challenge {
        scope: Some("mcp:write".into()),
        ..Challenge::default()
    };
    assert_eq!(
        choose_scope(&step_up, None, Some(&before), &m).as_deref(),
        Some("mcp:basic mcp:write")
    );
    let offline = metadata(Some(vec!["mcp:basic", "offline_access"]));
    assert_eq!(
        choose_scope(&challenge, None, None, &offline).as_deref(),
        Some("mcp:basic offline_access")
    );
    assert_eq!(choose_scope(&none, None, None, &offline), None);
}

/// A token kept for a server reached over plain `http://` off this
/// machine (kept before the refusal of such servers, or by the
/// application's own store) is not sent to it: the refusal's reason (RFC
/// 6750 section 5.3, a bearer token over TLS only) holds for a kept token
/// as for one obtained. On main `header` gave it, and every request
/// carried it in clear text until the server refused it.
#[test]
fn a_kept_token_is_not_sent_in_clear_text_off_this_machine() {
    use crate::client::oauth::TokenStore as _;
    let kept = |server: &str| {
        let store = crate::client::oauth::MemoryTokenStore::default();
        store.save(Some(&Tokens {
            access_token: "at-SECRET".into(),
            resource: server.into(),
            ..Tokens::default()
        }));
        let oauth = OAuth::client_credentials("id", "secret").token_store(store);
        Authorizer::new(oauth, server, Trust::default())
            .unwrap()
            .header()
    };
    assert_eq!(kept("http://10.0.0.5/mcp"), None);
    assert_eq!(kept("http://192.0.2.1:8080/mcp"), None);
    let bearer = Some(("Authorization".to_owned(), "Bearer at-SECRET".to_owned()));
    assert_eq!(kept("http://127.0.0.1:9/mcp"), bearer);
    assert_eq!(kept("https://192.0.2.1/mcp"), bearer);
}

/// Review review-fixes15c. A server reached with a query (a tenant, a
/// key) whose metadata names it with that query (`identical`, taken by
/// the discovery since left15) has its tokens kept with that `resource`;
/// the next run must find them. On left15 the kept token's check
/// (`resource_matches`) refused any resource with a query: the token
/// obtained was dropped at every start, and `mcp-stdio login` was asked
/// for again at every command.
#[test]
fn a_kept_token_for_a_resource_with_the_servers_query_is_used() {
    use crate::client::oauth::TokenStore as _;
    let server = "https://192.0.2.1/mcp?tenant=a";
    let kept = |resource: &str| {
        let store = crate::client::oauth::MemoryTokenStore::default();
        store.save(Some(&Tokens {
            access_token: "at-SECRET".into(),
            resource: resource.into(),
            ..Tokens::default()
        }));
        let oauth = OAuth::client_credentials("id", "secret").token_store(store);
        Authorizer::new(oauth, server, Trust::default())
            .unwrap()
            .header()
    };
    let bearer = Some(("Authorization".to_owned(), "Bearer at-SECRET".to_owned()));
    assert_eq!(kept("https://192.0.2.1/mcp"), bearer);
    assert_eq!(kept("https://192.0.2.1/mcp?tenant=a"), bearer);
    assert_eq!(kept("https://192.0.2.1/mcp?tenant=b"), None);
}

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

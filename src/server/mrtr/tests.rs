use super::*;

/// Claim (review size11): `verify` reads the sealed JSON through
/// `from_utf8` + `from_str` since ada2551; it accepts and refuses what
/// `from_slice` did: bytes that are not UTF-8 (in a string or not), a
/// byte order mark, a lone surrogate written as an escape.
#[test]
fn verify_refuses_sealed_bytes_that_are_not_json_text_as_from_slice_did() {
    let sealer = Sealer::new(Some([7; 32]), Duration::from_secs(60));
    let seal = |body: &[u8]| {
        let mut signed = String::from("v1.");
        base64url_encode(body, &mut signed);
        let mac = sealer.mac(signed.as_bytes());
        signed.push('.');
        base64url_encode(&mac, &mut signed);
        signed
    };
    let good = br#"{"m":"tools/call","d":"x","e":18446744073709551615,"s":"\ud83d\ude00"}"#;
    assert!(serde_json::from_slice::<Payload>(good).is_ok());
    assert!(sealer.verify(&seal(good)).is_ok());
    let bad: [&[u8]; 7] = [
        b"{\"m\":\"\xff\",\"d\":\"x\",\"e\":1}",
        b"{\"m\":\"\xed\xa0\x80\",\"d\":\"x\",\"e\":1}",
        b"\xef\xbb\xbf{\"m\":\"a\",\"d\":\"x\",\"e\":1}",
        br#"{"m":"\ud800","d":"x","e":1}"#,
        br#"{"m":"a","d":"\udc00x","e":1}"#,
        b"{\"m\":\"a\",\"d\":\"x\",\"e\":1}\xff",
        b"{\"m\":\"a\",\"d\":\"x\",\"e\":1,\"\xc0\x80\":0}",
    ];
    for body in bad {
        assert!(serde_json::from_slice::<Payload>(body).is_err(), "{body:?}");
        let Err(refused) = sealer.verify(&seal(body)) else {
            panic!("accepted: {body:?}");
        };
        assert_eq!(refused.code, crate::jsonrpc::error_code::INVALID_PARAMS);
    }
}

#[test]
fn base64url_round_trips() {
    for len in 0..40 {
        let data: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
        let mut text = String::new();
        base64url_encode(&data, &mut text);
        assert!(!text.contains('='));
        assert_eq!(base64url_decode(&text), Some(data));
    }
    assert_eq!(base64url_decode("a*b"), None);
}

#[test]
fn canonical_sorts_keys_and_keeps_numbers_exact() {
    let text =
        r#" { "b" : [ 1.50, {"y":"\u0041","x":18446744073709551617} ], "a":true,"a":null } "#;
    assert_eq!(
        canonical(Some(text)),
        r#"{"a":null,"b":[1.50,{"x":18446744073709551617,"y":"A"}]}"#
    );
    assert_ne!(
        canonical(Some(r#"{"n":18446744073709551616}"#)),
        canonical(Some(r#"{"n":18446744073709551617}"#))
    );
    assert_eq!(canonical(Some("{\"a\":")), "{\"a\":");
    assert_eq!(canonical(None), "{}");
    assert_eq!(canonical(Some("{}")), "{}");
    assert_eq!(canonical(Some(r#"{"k":"a\"b,}"}"#)), r#"{"k":"a\"b,}"}"#);
}

/// Claim (review of the size commit 78eb8ba): quoting a key or string
/// through `serde_json::to_string` gives the text `Value::String(..)`'s
/// `Display` gave: every control character, quote, backslash, DEL,
/// U+2028/U+2029, non-ASCII, astral characters written raw or as
/// escapes (a surrogate pair), in keys and in values alike. A lone
/// surrogate is not JSON serde_json reads: the text digests as it is.
#[test]
fn canonical_quotes_strings_and_keys_as_value_display_did() {
    let mut samples: Vec<String> = (0u32..0x80)
        .chain([
            0x7f, 0x80, 0x9f, 0xa0, 0xe9, 0x2028, 0x2029, 0xfeff, 0xfffd, 0x1f600,
        ])
        .filter_map(char::from_u32)
        .map(|c| format!("a{c}b"))
        .collect();
    samples.extend(
        [
            "",
            "\\",
            "\"",
            "/",
            "</script>",
            "\u{0}\u{1f}\u{7f}",
            "é日本\u{10ffff}",
        ]
        .map(str::to_owned),
    );
    for sample in &samples {
        let before = Value::String(sample.clone()).to_string();
        let text = format!("{{\"v\":{before},{before}:1}}");
        let mut members = [
            ("v".to_owned(), before.clone()),
            (sample.clone(), "1".to_owned()),
        ];
        members.sort();
        let expected = format!(
            "{{{}}}",
            members
                .iter()
                .map(|(k, v)| format!("{}:{v}", Value::String(k.clone())))
                .collect::<Vec<_>>()
                .join(",")
        );
        let expected = if sample == "v" {
            r#"{"v":1}"#.to_owned()
        } else {
            expected
        };
        assert_eq!(canonical(Some(&text)), expected, "{sample:?}");
    }
    // Escapes in the input re-encoded: \/ and \u00e9 and a surrogate
    // pair become the characters; \u001f stays an escape.
    assert_eq!(
        canonical(Some(r#"{"\u00e9\/":"\ud83d\ude00\u001f\u007f\b\f\n\r\t"}"#)),
        "{\"é/\":\"\u{1f600}\\u001f\u{7f}\\b\\f\\n\\r\\t\"}"
    );
    // Lone surrogates (key and value) are no JSON for serde_json.
    for lone in [r#"{"\ud800":1}"#, r#"{"k":"\udc00"}"#, r#"{"\ud83dx":1}"#] {
        assert_eq!(canonical(Some(lone)), lone);
    }
}

/// Claim: a lifetime of more than 2^64 milliseconds wraps. `seal` took
/// `ttl.as_millis() as u64`: a lifetime meant as "practically never"
/// (2^62 seconds here) became 0 ms, and every state expired at once.
/// Fixed: it saturates.
#[test]
fn a_lifetime_beyond_u64_milliseconds_does_not_wrap_to_zero() {
    let meta = RequestMeta::for_tests(serde_json::json!({}));
    let sealer = Sealer::new(Some([7; 32]), Duration::from_secs(1 << 62));
    let mut result = InputRequiredResult::default().with_request_state("s");
    sealer.seal(&mut result, "tools/call", "D", &meta).unwrap();
    let state = result.request_state.as_deref();
    let retry = sealer.open(state, None, "tools/call", || "D".into(), &meta);
    assert_eq!(
        retry.map(|r| r.state).map_err(|e| e.message),
        Ok(Some("s".into()))
    );
}

#[test]
fn sealed_state_opens_only_unchanged() {
    let sealer = Sealer::new(Some([7; 32]), Duration::from_secs(60));
    let meta = RequestMeta::for_tests(serde_json::json!({ "elicitation": {} }));
    let mut result = InputRequiredResult::default().with_request_state("step 1");
    sealer.seal(&mut result, "tools/call", "D", &meta).unwrap();
    let sealed = result.request_state.unwrap();
    let retry = sealer
        .open(Some(&sealed), None, "tools/call", || "D".into(), &meta)
        .unwrap();
    assert_eq!(retry.state.as_deref(), Some("step 1"));
    // Another request, another method, one flipped byte, another key.
    assert!(
        sealer
            .open(Some(&sealed), None, "tools/call", || "E".into(), &meta)
            .is_err()
    );
    assert!(
        sealer
            .open(Some(&sealed), None, "prompts/get", || "D".into(), &meta)
            .is_err()
    );
    let mut bytes = sealed.clone().into_bytes();
    bytes[10] ^= 1;
    let flipped = String::from_utf8(bytes).unwrap();
    assert!(
        sealer
            .open(Some(&flipped), None, "tools/call", || "D".into(), &meta)
            .is_err()
    );
    let other = Sealer::new(Some([8; 32]), Duration::from_secs(60));
    assert!(
        other
            .open(Some(&sealed), None, "tools/call", || "D".into(), &meta)
            .is_err()
    );
    // Expired.
    let short = Sealer::new(Some([7; 32]), Duration::ZERO);
    let mut result = InputRequiredResult::default();
    short.seal(&mut result, "tools/call", "D", &meta).unwrap();
    let err = short.open(
        result.request_state.as_deref(),
        None,
        "tools/call",
        || "D".into(),
        &meta,
    );
    assert!(err.unwrap_err().message.contains("expired"));
}

/// Claim (review seal14): a MAC cut short, emptied, lengthened or taken
/// from another state passes `verify`. It does not: `verify_slice`
/// wants all 32 bytes and compares them in constant time; a state
/// without its MAC, or with a second one, is refused too.
#[test]
fn a_mac_cut_short_lengthened_or_borrowed_is_refused() {
    let sealer = Sealer::new(Some([7; 32]), Duration::from_secs(60));
    let meta = RequestMeta::for_tests(serde_json::json!({}));
    let seal = |state: &str| {
        let mut result = InputRequiredResult::default().with_request_state(state);
        sealer.seal(&mut result, "tools/call", "D", &meta).unwrap();
        result.request_state.unwrap()
    };
    let sealed = seal("mine");
    let other = seal("theirs");
    let (signed, mac) = sealed.rsplit_once('.').unwrap();
    let (_, other_mac) = other.rsplit_once('.').unwrap();
    assert!(sealer.verify(&sealed).is_ok());
    let forged = [
        signed.to_owned(),
        format!("{signed}."),
        format!("{signed}.{}", &mac[..mac.len() - 1]),
        format!("{signed}.{}", &mac[..22]),
        format!("{signed}.{mac}A"),
        format!("{signed}.{mac}AAAA"),
        format!("{signed}.{other_mac}"),
        format!("{sealed}.{mac}"),
        format!("v2{}", &sealed[2..]),
    ];
    for state in forged {
        let refused = sealer.open(Some(&state), None, "tools/call", || "D".into(), &meta);
        let message = refused.map(|_| ()).unwrap_err().message;
        assert!(message.contains("tampered"), "{state}: {message}");
    }
}

/// Claim (review seal14): `RequestContext::input_responses` said "every
/// answer has the shape of the request it names". Only a `requestState`
/// names requests: a request that sends `inputResponses` without one (a
/// first call, as the conformance suite sends it; a client that dropped
/// the state) hands the handler any JSON under any key, and a key the
/// state does not name passes untouched too. The doc now says so; the
/// typed accessors (`elicitation`, `sampling`, `roots`) read only what
/// fits.
#[test]
fn answers_without_a_state_reach_the_handler_unchecked() {
    let sealer = Sealer::new(Some([7; 32]), Duration::from_secs(60));
    let meta = RequestMeta::for_tests(serde_json::json!({ "elicitation": {} }));
    let answers = r#"{"user_name":12345,"other":{"x":1}}"#;
    let retry = sealer
        .open(None, Some(answers), "tools/call", || "D".into(), &meta)
        .unwrap();
    assert_eq!(retry.responses["user_name"].0, serde_json::json!(12345));
    assert!(retry.responses["user_name"].to_elicit_result().is_err());
    // With a state that names `user_name`, the same answer is refused,
    // and `other`, which it does not name, passes.
    let mut result = InputRequiredResult::new(
        [(
            "user_name".to_owned(),
            InputRequest::Elicit(crate::types::ElicitRequestParams::Form(
                crate::types::ElicitRequestFormParams::new(
                    "name?",
                    crate::types::ElicitRequestedSchema::default(),
                ),
            )),
        )]
        .into_iter()
        .collect(),
    );
    sealer.seal(&mut result, "tools/call", "D", &meta).unwrap();
    let state = result.request_state.as_deref();
    let refused = sealer.open(state, Some(answers), "tools/call", || "D".into(), &meta);
    assert!(refused.is_err());
    let other = r#"{"other":{"x":1}}"#;
    let retry = sealer
        .open(state, Some(other), "tools/call", || "D".into(), &meta)
        .unwrap();
    assert_eq!(retry.responses["other"].0, serde_json::json!({ "x": 1 }));
}

/// Claim (review-fixes15b), found false: an issuer holding a separator
/// (`|`, `:`, `s:`) runs into its subject in the sealed principal, so
/// that one issuer's subject opens another's state. The issuer's length
/// comes first: no two owners seal alike, nor one with an issuer and
/// one without (kept as a guard).
#[test]
fn no_issuer_runs_into_its_subject_in_the_sealed_principal() {
    let of = |issuer: Option<&str>, subject: Option<&str>, client: Option<&str>| {
        let mut info = TokenInfo::new();
        info.issuer = issuer.map(str::to_owned);
        info.subject = subject.map(str::to_owned);
        info.client_id = client.map(str::to_owned);
        let mut meta = RequestMeta::for_tests(serde_json::json!({}));
        meta.token = Some(std::sync::Arc::new(info));
        principal(&meta)
    };
    let owners = [
        of(Some("a|b"), Some("c"), None),
        of(Some("a"), Some("b|c"), None),
        of(Some("as:b"), Some("c"), None),
        of(Some("a"), Some("b"), None),
        of(Some("1:as"), Some("b"), None),
        of(None, Some("1:as:b"), None),
        of(None, Some("b"), None),
        of(None, None, Some("b")),
        of(Some("a"), None, Some("b")),
        of(Some("as:b"), None, Some("c")),
        of(Some("10:a"), Some("b"), None),
        of(Some("1"), Some("0:a"), None),
    ];
    for (i, a) in owners.iter().enumerate() {
        assert!(a.is_some());
        for b in &owners[i + 1..] {
            assert_ne!(a, b);
        }
    }
}

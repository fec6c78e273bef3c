use super::*;
use serde_json::json;

/// Every example of the 2026-07-28 spec (`tests/spec-examples/`, the
/// spec's `examples/` by definition) is valid against its definition;
/// and, with the first member its definition requires taken out, is
/// not.
#[test]
fn the_specs_examples_are_valid_and_without_a_required_member_are_not() {
    let doc = Document::parse(MODERN);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/spec-examples");
    let (mut valid, mut refused, mut wrong) = (0, 0, Vec::new());
    for def in std::fs::read_dir(&dir).expect("tests/spec-examples") {
        let def = def.unwrap().path();
        let name = def.file_name().unwrap().to_str().unwrap().to_owned();
        for file in std::fs::read_dir(&def).unwrap() {
            let file = file.unwrap().path();
            let example: Value =
                serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
            match doc.validate_def(&name, &example) {
                Found::Valid => valid += 1,
                other => wrong.push(format!("{}: {other:?}", file.display())),
            }
            let required = doc
                .root
                .pointer(&format!("/$defs/{name}/required/0"))
                .and_then(Value::as_str);
            if let (Some(member), Some(map)) = (required, example.as_object()) {
                let mut without = map.clone();
                without.remove(member);
                match doc.validate_def(&name, &Value::Object(without)) {
                    Found::Invalid(_) => refused += 1,
                    other => wrong.push(format!("{} without {member}: {other:?}", file.display())),
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    assert!(
        valid >= 100 && refused >= 50,
        "{valid} valid, {refused} refused"
    );
}

#[test]
fn a_schema_whose_refs_branch_is_undecided_not_walked_for_ever() {
    let bomb = json!({ "oneOf": [{ "$ref": "#" }, { "$ref": "#" }] });
    assert!(matches!(
        Document::of(&bomb).validate(&json!({})),
        Found::Unknown(_)
    ));
    // An error outside the branches is still certain.
    let mut refusing = bomb.clone();
    refusing["required"] = json!(["a"]);
    assert!(matches!(
        Document::of(&refusing).validate(&json!({})),
        Found::Invalid(_)
    ));
}

#[test]
fn the_spec_schemas_parse_and_name_the_results() {
    for (text, names) in [
        (
            MODERN,
            &["DiscoverResult", "ListToolsResult", "CallToolResult"][..],
        ),
        (LEGACY, &["InitializeResult", "ListToolsResult"][..]),
    ] {
        let doc = Document::parse(text);
        for name in names {
            assert!(doc.has(name), "{name}");
        }
    }
}

#[test]
fn a_discover_result_is_valid_and_a_broken_one_is_not() {
    let doc = Document::parse(MODERN);
    let good = json!({
        "resultType": "complete", "supportedVersions": ["2026-07-28"],
        "cacheScope": "public", "ttlMs": 0,
        "capabilities": { "tools": {} },
        "_meta": { "io.modelcontextprotocol/serverInfo": { "name": "x", "version": "1" } }
    });
    assert_eq!(doc.validate_def("DiscoverResult", &good), Found::Valid);
    let mut bad = good.clone();
    bad["supportedVersions"] = json!("2026-07-28");
    let Found::Invalid(errors) = doc.validate_def("DiscoverResult", &bad) else {
        panic!("accepted {bad}");
    };
    assert!(
        errors[0].starts_with("/supportedVersions: must be array"),
        "{errors:?}"
    );
}

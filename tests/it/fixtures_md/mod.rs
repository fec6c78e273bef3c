//! Walks the fixture list of FIXTURES.md (vendored in tests/fixtures) and
//! checks that the everything server answers each fixture as described.
//!
//! The walked list comes from the file: every table row whose first cell
//! names something in backticks (`` `echo` ``, ``resource `mem://counter` ``,
//! ``template `test://template/{id}/data` ``, `` `tools/list`, `prompts/list` ``)
//! is a fixture, and a "same tool, ..." row is a variant of the fixture
//! above it. The names of a paragraph that says they are "not part of the
//! 2026-07-28 contract" are excluded. Every fixture needs a check in
//! [`CHECKS`], and every check a fixture.

mod checks;
mod helpers;
mod parse;
mod task_checks;

use serde_json::{Value, json};

use crate::support::{Peer, request};

use checks::CHECKS;
use helpers::{complete, reply_to};
use parse::{Kind, Listed, coverage_problems, parse};

const FIXTURES_MD: &str = include_str!("../../fixtures/FIXTURES.md");

/// The words of a paragraph whose backticked names FIXTURES.md excludes.
const NOT_IN_CONTRACT: &str = "not part of the 2026-07-28 contract";

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

// --- The walk ---------------------------------------------------------------

type Check = fn(&mut Peer);

#[test]
fn every_fixture_in_fixtures_md_answers_as_described() {
    let parsed = parse(FIXTURES_MD);
    let problems = coverage_problems(&parsed, CHECKS.iter().map(|(name, _)| *name));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let mut failed = Vec::new();
    for fixture in &parsed.fixtures {
        let (_, check) = CHECKS.iter().find(|(n, _)| *n == fixture.id).unwrap();
        let outcome = std::panic::catch_unwind(|| {
            let mut peer = Peer::start(&crate::everything::build());
            check(&mut peer);
            peer.finish_quietly();
        });
        if outcome.is_err() {
            failed.push(fixture.id.as_str());
        }
    }
    println!(
        "walked {} fixtures of FIXTURES.md (excluded as not in the contract: {})",
        parsed.fixtures.len(),
        parsed.excluded.join(", ")
    );
    assert!(
        failed.is_empty(),
        "these fixtures do not answer as FIXTURES.md describes: {failed:?}"
    );
}

#[test]
fn every_listed_fixture_of_fixtures_md_is_on_the_first_page() {
    let parsed = parse(FIXTURES_MD);
    let mut peer = Peer::start(&crate::everything::build());
    let tools = first_page(&mut peer, 1, "tools/list", "tools");
    let prompts = first_page(&mut peer, 2, "prompts/list", "prompts");
    let resources = first_page(&mut peer, 3, "resources/list", "resources");
    let templates = first_page(
        &mut peer,
        4,
        "resources/templates/list",
        "resourceTemplates",
    );
    let find = |items: &[Value], field: &str, name: &str| {
        items.iter().find(|item| item[field] == name).cloned()
    };
    for fixture in &parsed.fixtures {
        let name = fixture.name.as_str();
        let item = match fixture.kind {
            Kind::Tool => find(&tools, "name", name),
            Kind::Prompt => find(&prompts, "name", name),
            Kind::Resource => find(&resources, "uri", name),
            Kind::Template => find(&templates, "uriTemplate", name),
            Kind::Method | Kind::Variant => continue,
        };
        match (fixture.listed, item) {
            (Listed::Yes, None) => panic!("{name} is not on the first page of its list"),
            (Listed::No, Some(item)) => panic!("{name} is listed, FIXTURES.md says not: {item}"),
            (_, Some(item)) => assert_listing(fixture.kind, &item),
            (_, None) => {}
        }
    }
    // Section 9: the first listed resource reads with caching hints too.
    let first = resources[0]["uri"].clone();
    let read = reply_to(
        &mut peer,
        &request(5, "resources/read", json!({ "uri": first })),
    );
    assert_caching_hints(complete(&read));
    peer.finish_quietly();
}

/// What each list's `prompts-list`, `tools-list` and `resources-list`
/// scenarios require of every item.
fn assert_listing(kind: Kind, item: &Value) {
    let non_empty = |field: &str| item[field].as_str().is_some_and(|s| !s.is_empty());
    match kind {
        Kind::Tool => assert!(
            non_empty("description") && item["inputSchema"].is_object(),
            "{item}"
        ),
        Kind::Prompt => assert!(non_empty("description"), "{item}"),
        Kind::Resource => assert!(non_empty("name"), "{item}"),
        _ => {}
    }
}

/// The items of the first page of a list, whose result carries caching
/// hints (section 9).
fn first_page(peer: &mut Peer, id: i64, method: &str, key: &str) -> Vec<Value> {
    let resp = reply_to(peer, &request(id, method, json!({})));
    let result = complete(&resp);
    assert_caching_hints(result);
    result[key].as_array().unwrap().clone()
}

fn assert_caching_hints(result: &Value) {
    assert!(result["ttlMs"].is_u64(), "ttlMs ≥ 0: {result}");
    let scope = &result["cacheScope"];
    assert!(scope == "public" || scope == "private", "{result}");
}

#[test]
fn the_parser_reads_tables_variants_and_exclusions() {
    let markdown = "\
| Tool | Arguments |
|---|---|
| `kept` | none |
| `new_one` | none |
| tool `asks` | none |
| same tool, `resultType` | round 1 |
| MRTR tools | Section 8. |

Old tools: `old_a(x)`,
`old_b`. These are not part of the 2026-07-28 contract.

| Requirement | Detail |
|---|---|
| `server/discover` | not a fixture |

| URI | Listed? | Read |
|---|---|---|
| `test://hidden` | no | -32602 |
| template `test://t/{id}` | in `resources/templates/list` | text |
| *first* entry of `resources/list` | — | readable |

| Fixture | Round 1 |
|---|---|
| prompt `p` | asks |
| `mem://gone` (not listed) | -32602 |
| `tools/list`, `prompts/list` | never asks |
";
    let parsed = parse(markdown);
    let got: Vec<(&str, Kind, Listed)> = parsed
        .fixtures
        .iter()
        .map(|f| (f.name.as_str(), f.kind, f.listed))
        .collect();
    assert_eq!(
        got,
        [
            ("kept", Kind::Tool, Listed::Yes),
            ("new_one", Kind::Tool, Listed::Yes),
            ("asks", Kind::Tool, Listed::Yes),
            ("asks / resultType", Kind::Variant, Listed::No),
            ("test://hidden", Kind::Resource, Listed::No),
            ("test://t/{id}", Kind::Template, Listed::Yes),
            ("p", Kind::Prompt, Listed::Yes),
            ("mem://gone", Kind::Resource, Listed::No),
            ("tools/list", Kind::Method, Listed::Yes),
            ("prompts/list", Kind::Method, Listed::Yes),
        ]
    );
    assert_eq!(parsed.excluded, ["old_a", "old_b"]);
    let checks = ["kept", "asks", "asks / resultType", "gone_tool", "old_a"];
    let mut problems = coverage_problems(&parsed, checks.into_iter());
    problems.truncate(2);
    assert_eq!(
        problems,
        [
            "fixture `new_one` in FIXTURES.md has no check",
            "fixture `test://hidden` in FIXTURES.md has no check"
        ]
    );
    let problems = coverage_problems(&parsed, checks.into_iter());
    assert_eq!(
        problems[problems.len() - 2..],
        [
            "a check for `gone_tool`, which FIXTURES.md no longer mentions",
            "a check for `old_a`, which FIXTURES.md says is not part of the 2026-07-28 contract",
        ]
    );
}

#[test]
fn a_name_two_kinds_of_fixture_share_gets_its_kind_in_the_check_name() {
    let markdown = "\
| Prompt | Arguments |
|---|---|
| `greet` | name |

| Tool | Arguments | Mode |
|---|---|---|
| `greet` | name | never |

| Scenario | Fixtures |
|---|---|
| `tasks-lifecycle` | `greet` |
";
    let parsed = parse(markdown);
    let got: Vec<(&str, &str, Kind)> = parsed
        .fixtures
        .iter()
        .map(|f| (f.name.as_str(), f.id.as_str(), f.kind))
        .collect();
    assert_eq!(
        got,
        [
            ("greet", "greet", Kind::Prompt),
            ("greet", "tool greet", Kind::Tool)
        ]
    );
}

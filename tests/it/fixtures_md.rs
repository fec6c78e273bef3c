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

use serde_json::{Map, Value, json};

use crate::support::{Peer, WAIT, call, cancel, meta, request};

const FIXTURES_MD: &str = include_str!("../fixtures/FIXTURES.md");

/// The words of a paragraph whose backticked names FIXTURES.md excludes.
const NOT_IN_CONTRACT: &str = "not part of the 2026-07-28 contract";

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

// --- The parser -----------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Tool,
    Resource,
    Template,
    Prompt,
    /// A method (`tools/list`) rather than something listed.
    Method,
    /// A "same tool, ..." row: one more aspect of the fixture above it.
    Variant,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Listed {
    Yes,
    No,
    Optional,
}

#[derive(Debug, PartialEq)]
struct Fixture {
    name: String,
    kind: Kind,
    listed: Listed,
}

#[derive(Debug, Default)]
struct Parsed {
    fixtures: Vec<Fixture>,
    excluded: Vec<String>,
}

/// A table of fixtures: what its rows are unless they say (`None`: each
/// row says, or its name does) and which column says whether it is listed.
struct Table {
    kind: Option<Kind>,
    listed_column: Option<usize>,
}

impl Table {
    /// `None` for a table of requirements (no fixtures in it).
    fn from_header(header: &[&str]) -> Option<Table> {
        let kind = match header[0] {
            "Tool" => Some(Kind::Tool),
            "URI" => Some(Kind::Resource),
            "Prompt" => Some(Kind::Prompt),
            "Name" | "Fixture" => None,
            "Requirement" => return None,
            other => panic!("FIXTURES.md has a table this test does not know: {other:?}"),
        };
        let listed_column = header.iter().position(|c| c.starts_with("Listed"));
        Some(Table {
            kind,
            listed_column,
        })
    }
}

fn cells(line: &str) -> Vec<&str> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split('|').map(str::trim).collect()
}

fn is_separator(cells: &[&str]) -> bool {
    cells
        .iter()
        .all(|c| !c.is_empty() && c.chars().all(|ch| "-:".contains(ch)))
}

/// The backticked names a cell starts with, and the text after them:
/// `` `a`, `b` (x) `` is `(["a", "b"], "(x)")`.
fn leading_names(cell: &str) -> (Vec<&str>, &str) {
    let mut names = Vec::new();
    let mut rest = cell;
    while let Some((name, tail)) = rest.strip_prefix('`').and_then(|r| r.split_once('`')) {
        names.push(name);
        rest = tail.trim_start();
        match rest.strip_prefix(',').map(str::trim_start) {
            Some(next) if next.starts_with('`') => rest = next,
            _ => break,
        }
    }
    (names, rest)
}

fn kind_of_word(word: &str) -> Option<Kind> {
    match word {
        "tool" => Some(Kind::Tool),
        "resource" => Some(Kind::Resource),
        "template" => Some(Kind::Template),
        "prompt" => Some(Kind::Prompt),
        _ => None,
    }
}

/// What a name in a table that does not say is: a URI or a method.
fn kind_of_name(name: &str) -> Kind {
    if name.contains("://") {
        Kind::Resource
    } else if name.contains('/') {
        Kind::Method
    } else {
        panic!("FIXTURES.md: cannot tell what `{name}` is")
    }
}

impl Parsed {
    fn push(&mut self, fixture: Fixture) {
        match self.fixtures.iter().find(|f| f.name == fixture.name) {
            Some(seen) => assert_eq!(seen.kind, fixture.kind, "`{}` twice", fixture.name),
            None => self.fixtures.push(fixture),
        }
    }

    fn row(&mut self, table: &Table, cells: &[&str]) {
        let first = cells[0];
        if let Some(aspect) = first.strip_prefix("same tool, ") {
            let base = self.fixtures.iter().rev().find(|f| f.kind == Kind::Tool);
            let base = base.expect("a `same tool` row follows a tool");
            let name = format!("{} / {}", base.name, aspect.replace('`', ""));
            let (kind, listed) = (Kind::Variant, Listed::No);
            return self.push(Fixture { name, kind, listed });
        }
        let (word, rest) = match first.split_once(' ') {
            Some((word, rest)) if rest.starts_with('`') => match kind_of_word(word) {
                Some(kind) => (Some(kind), rest),
                None => (None, first),
            },
            _ => (None, first),
        };
        let (names, tail) = leading_names(rest);
        let listed = match table.listed_column.map(|i| cells[i].to_lowercase()) {
            Some(c) if c.starts_with("no") => Listed::No,
            Some(c) if c.starts_with("optional") => Listed::Optional,
            Some(_) => Listed::Yes,
            None if tail.contains("not listed") => Listed::No,
            None => Listed::Yes,
        };
        for name in names {
            let kind = word.or(table.kind).unwrap_or_else(|| kind_of_name(name));
            let name = name.to_owned();
            self.push(Fixture { name, kind, listed });
        }
    }

    /// The names of a paragraph that says they are not in the contract
    /// (`test_sampling(prompt)` is the tool `test_sampling`).
    fn paragraph(&mut self, text: &str) {
        if text.contains(NOT_IN_CONTRACT) {
            let names = text.split('`').skip(1).step_by(2);
            let names = names.map(|n| n.split('(').next().unwrap().to_owned());
            self.excluded.extend(names);
        }
    }
}

fn parse(markdown: &str) -> Parsed {
    let mut parsed = Parsed::default();
    // The current table (`Some(None)`: one without fixtures).
    let mut table: Option<Option<Table>> = None;
    let mut paragraph = String::new();
    for line in markdown.lines().chain([""]) {
        let is_row = line.trim_start().starts_with('|');
        if is_row || line.trim().is_empty() || line.starts_with('#') {
            parsed.paragraph(&paragraph);
            paragraph.clear();
        } else {
            paragraph.push_str(line);
            paragraph.push(' ');
        }
        if !is_row {
            table = None;
            continue;
        }
        let cells = cells(line);
        match &table {
            None => table = Some(Table::from_header(&cells)),
            Some(Some(t)) if !is_separator(&cells) => parsed.row(t, &cells),
            Some(_) => {}
        }
    }
    for name in &parsed.excluded {
        let walked = parsed.fixtures.iter().any(|f| &f.name == name);
        assert!(!walked, "FIXTURES.md lists `{name}` and excludes it too");
    }
    parsed
}

/// What is wrong between the fixtures of the file and the checks.
fn coverage_problems<'a>(parsed: &Parsed, checks: impl Iterator<Item = &'a str>) -> Vec<String> {
    let checks: Vec<&str> = checks.collect();
    let mut problems = Vec::new();
    for fixture in &parsed.fixtures {
        if !checks.contains(&fixture.name.as_str()) {
            problems.push(format!(
                "fixture `{}` in FIXTURES.md has no check",
                fixture.name
            ));
        }
    }
    for (n, name) in checks.iter().enumerate() {
        if checks[..n].contains(name) {
            problems.push(format!("two checks for `{name}`"));
        } else if parsed.excluded.iter().any(|e| e == name) {
            problems.push(format!(
                "a check for `{name}`, which FIXTURES.md says is {NOT_IN_CONTRACT}"
            ));
        } else if !parsed.fixtures.iter().any(|f| f.name == *name) {
            problems.push(format!(
                "a check for `{name}`, which FIXTURES.md no longer mentions"
            ));
        }
    }
    problems
}

// --- The walk ---------------------------------------------------------------

type Check = fn(&mut Peer);

#[test]
fn every_fixture_in_fixtures_md_answers_as_described() {
    let parsed = parse(FIXTURES_MD);
    let problems = coverage_problems(&parsed, CHECKS.iter().map(|(name, _)| *name));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let mut failed = Vec::new();
    for fixture in &parsed.fixtures {
        let (_, check) = CHECKS.iter().find(|(n, _)| *n == fixture.name).unwrap();
        let outcome = std::panic::catch_unwind(|| {
            let mut peer = Peer::start(&crate::everything::build());
            check(&mut peer);
            peer.finish_quietly();
        });
        if outcome.is_err() {
            failed.push(fixture.name.as_str());
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

// --- Helpers ------------------------------------------------------------------

/// Sends `req`; its reply must be the very next message and echo its id.
fn reply_to(peer: &mut Peer, req: &Value) -> Value {
    let resp = peer.ask(req);
    assert_eq!(
        resp["id"], req["id"],
        "the next message answers {req}: {resp}"
    );
    resp
}

/// The result of a complete reply (not an error, not `input_required`).
fn complete(resp: &Value) -> &Value {
    assert_eq!(resp["result"]["resultType"], "complete", "{resp}");
    &resp["result"]
}

/// Calls `tool` and returns its complete result.
fn call_tool(peer: &mut Peer, id: i64, tool: &str, arguments: Value) -> Value {
    complete(&reply_to(peer, &call(id, tool, arguments))).clone()
}

/// The text of a result's first content block.
fn text(result: &Value) -> &str {
    let text = result["content"][0]["text"].as_str();
    text.unwrap_or_else(|| panic!("no text content: {result}"))
}

fn error_code(resp: &Value) -> i64 {
    resp["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {resp}"))
}

fn with_progress_token(mut req: Value, token: Value) -> Value {
    req["params"]["_meta"]["progressToken"] = token;
    req
}

/// Sends `req`, then reads its notifications up to its reply.
fn notes_then_reply(peer: &mut Peer, req: &Value) -> (Vec<Value>, Value) {
    peer.send(req);
    let mut notes = Vec::new();
    loop {
        let msg = peer.recv();
        if msg.get("method").is_none() && msg["id"] == req["id"] {
            return (notes, msg);
        }
        notes.push(msg);
    }
}

/// Sends `req` and reads its reply and `n` notifications, in any order
/// (a reply and the notifications it causes may come either way).
fn reply_and(peer: &mut Peer, req: &Value, n: usize) -> (Value, Vec<Value>) {
    peer.send(req);
    let (replies, notes): (Vec<Value>, Vec<Value>) = (0..=n)
        .map(|_| peer.recv())
        .partition(|m| m.get("method").is_none() && m["id"] == req["id"]);
    assert_eq!(replies.len(), 1, "one reply among {notes:?}");
    (replies.into_iter().next().unwrap(), notes)
}

fn progress_of(notes: &[Value], token: &Value) -> Vec<(f64, Option<f64>)> {
    notes
        .iter()
        .map(|note| {
            assert_eq!(note["method"], "notifications/progress", "{note}");
            assert_eq!(&note["params"]["progressToken"], token, "{note}");
            let params = &note["params"];
            (
                params["progress"].as_f64().unwrap(),
                params["total"].as_f64(),
            )
        })
        .collect()
}

fn assert_tagged(msg: &Value, method: &str, subscription: &str) {
    assert_eq!(msg["method"], method, "{msg}");
    assert_eq!(
        msg["params"]["_meta"][SUBSCRIPTION_ID], subscription,
        "{msg}"
    );
}

/// Opens a `subscriptions/listen` stream; returns its acknowledgement,
/// which must come first.
fn open(peer: &mut Peer, id: &str, filter: Value) -> Value {
    let req = request(
        id,
        "subscriptions/listen",
        json!({ "notifications": filter }),
    );
    let ack = peer.ask(&req);
    assert_tagged(&ack, "notifications/subscriptions/acknowledged", id);
    ack
}

/// A request whose reply must be the next message: nothing else was
/// written in between.
fn barrier(peer: &mut Peer, id: &str) {
    reply_to(peer, &request(id, "server/discover", json!({})));
}

/// Closes listen streams (a cancelled listen gets no final result).
fn close(peer: &mut Peer, ids: &[&str]) {
    for id in ids {
        peer.send(&cancel(*id));
    }
    barrier(peer, "closed");
}

/// The item of a list's first page whose `field` is `name`.
fn listed(peer: &mut Peer, method: &str, key: &str, field: &str, name: &str) -> Value {
    let page = first_page(peer, 900, method, key);
    let item = page.into_iter().find(|item| item[field] == name);
    item.unwrap_or_else(|| panic!("{name} is not on the first page of {method}"))
}

fn read(peer: &mut Peer, id: i64, uri: &str) -> Value {
    reply_to(peer, &request(id, "resources/read", json!({ "uri": uri })))
}

/// The first contents of a successful read.
fn read_contents(peer: &mut Peer, id: i64, uri: &str) -> Value {
    complete(&read(peer, id, uri))["contents"][0].clone()
}

fn get_prompt(peer: &mut Peer, id: i64, name: &str, arguments: Value) -> Value {
    let params = json!({ "name": name, "arguments": arguments });
    complete(&reply_to(peer, &request(id, "prompts/get", params))).clone()
}

fn is_base64(s: &str) -> bool {
    !s.is_empty()
        && s.len().is_multiple_of(4)
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b))
}

fn non_empty(value: &Value) -> bool {
    value.as_str().is_some_and(|s| !s.is_empty())
}

/// A content block of `kind` in a result's `content`.
fn block<'a>(result: &'a Value, kind: &str) -> &'a Value {
    let blocks = result["content"].as_array().unwrap();
    let found = blocks.iter().find(|b| b["type"] == kind);
    found.unwrap_or_else(|| panic!("no {kind} content in {result}"))
}

// --- MRTR helpers ---------------------------------------------------------

/// The default client capabilities the suite drives MRTR with.
fn all_caps() -> Value {
    json!({ "elicitation": {}, "sampling": {}, "roots": {} })
}

/// A request of `method` with `params` and `_meta` declaring `caps`.
fn with_caps(id: i64, method: &str, mut params: Value, caps: Value) -> Value {
    let mut meta = meta();
    meta["io.modelcontextprotocol/clientCapabilities"] = caps;
    params["_meta"] = meta;
    request(id, method, params)
}

fn tool_params(tool: &str) -> Value {
    json!({ "name": tool, "arguments": {} })
}

/// The retry of `params` after `round`: these answers and the previous
/// round's `requestState`, if it had one, unchanged.
fn retry_params(params: &Value, round: &Value, answers: Value) -> Value {
    let mut params = params.clone();
    params["inputResponses"] = answers;
    if let Some(state) = round["result"].get("requestState") {
        params["requestState"] = state.clone();
    }
    params
}

/// The `inputRequests` of an `InputRequiredResult` reply.
fn input_requests(resp: &Value) -> &Map<String, Value> {
    assert_eq!(resp["result"]["resultType"], "input_required", "{resp}");
    let requests = resp["result"]["inputRequests"].as_object();
    let requests = requests.unwrap_or_else(|| panic!("no inputRequests: {resp}"));
    assert!(!requests.is_empty(), "{resp}");
    requests
}

fn methods(resp: &Value) -> Vec<&str> {
    let requests = input_requests(resp).values();
    requests.map(|r| r["method"].as_str().unwrap()).collect()
}

fn request_state(resp: &Value) -> &str {
    let state = resp["result"]["requestState"].as_str();
    state
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| panic!("no requestState: {resp}"))
}

/// The harness's mock answer to one input request; an elicitation is
/// accepted with `Alice` for strings and `true` for booleans.
fn mock_answer(input_request: &Value) -> Value {
    match input_request["method"].as_str().unwrap() {
        "elicitation/create" => {
            let schema = &input_request["params"]["requestedSchema"]["properties"];
            let content: Map<String, Value> = schema
                .as_object()
                .unwrap()
                .iter()
                .map(|(field, s)| {
                    let value = if s["type"] == "boolean" {
                        json!(true)
                    } else {
                        json!("Alice")
                    };
                    (field.clone(), value)
                })
                .collect();
            json!({ "action": "accept", "content": content })
        }
        "sampling/createMessage" => json!({
            "role": "assistant",
            "content": { "type": "text", "text": "Paris" },
            "model": "test-model",
            "stopReason": "endTurn"
        }),
        "roots/list" => json!({ "roots": [{ "uri": "file:///test/root", "name": "Test Root" }] }),
        other => panic!("an input request the harness cannot answer: {other}"),
    }
}

/// Mock answers to everything `resp` asks for.
fn mock_answers(resp: &Value) -> Value {
    let requests = input_requests(resp).iter();
    Value::Object(requests.map(|(k, r)| (k.clone(), mock_answer(r))).collect())
}

/// Round 1 of `tool` with every capability declared.
fn first_round(peer: &mut Peer, tool: &str) -> Value {
    reply_to(
        peer,
        &with_caps(1, "tools/call", tool_params(tool), all_caps()),
    )
}

/// The retry of `tool` after `round` with `answers`.
fn next_round(peer: &mut Peer, id: i64, tool: &str, round: &Value, answers: Value) -> Value {
    let params = retry_params(&tool_params(tool), round, answers);
    reply_to(peer, &with_caps(id, "tools/call", params, all_caps()))
}

/// Round 1 of `tool` asks for exactly the input requests of `methods`;
/// the retry with the mock answers completes.
fn mrtr_round_trip(peer: &mut Peer, tool: &str, expected: &[&str]) {
    let round = first_round(peer, tool);
    assert_eq!(methods(&round), expected, "{round}");
    let answers = mock_answers(&round);
    complete(&next_round(peer, 2, tool, &round, answers));
}

// --- The checks -------------------------------------------------------------

/// One check per fixture of FIXTURES.md, by the name the file gives it.
const CHECKS: &[(&str, Check)] = &[
    // Part A, tools.
    ("echo", check_echo),
    ("add", check_add),
    ("slow", check_slow),
    ("progress", check_progress),
    ("fail", check_fail),
    ("panic", check_panic),
    ("big", check_big),
    ("bump", check_bump),
    ("toggle_tool", check_toggle_tool),
    ("add_tool", check_add_tool),
    ("end_listen", check_end_listen),
    ("ask", check_ask),
    ("stats", check_stats),
    // Part A, resources and prompts.
    ("mem://counter", check_counter),
    ("mem://does-not-exist", |p| {
        check_not_found(p, "mem://does-not-exist")
    }),
    ("greet", check_greet),
    // Section 3, tools.
    ("test_simple_text", check_simple_text),
    ("test_image_content", check_image_content),
    ("test_audio_content", check_audio_content),
    ("test_embedded_resource", check_embedded_resource),
    ("test_multiple_content_types", check_multiple_content_types),
    ("test_error_handling", check_error_handling),
    ("test_tool_with_progress", check_tool_with_progress),
    ("test_missing_capability", check_missing_capability),
    ("test_streaming_elicitation", check_streaming_elicitation),
    ("test_logging_tool", check_logging_tool),
    ("test_trigger_tool_change", |p| {
        check_trigger(p, "test_trigger_tool_change", "toolsListChanged", "tools")
    }),
    ("test_trigger_prompt_change", |p| {
        check_trigger(
            p,
            "test_trigger_prompt_change",
            "promptsListChanged",
            "prompts",
        )
    }),
    ("json_schema_2020_12_tool", check_json_schema_2020_12_tool),
    // Section 4, resources.
    ("test://static-text", check_static_text),
    ("test://static-binary", check_static_binary),
    ("test://template/{id}/data", check_template),
    ("test://watched-resource", check_watched_resource),
    ("test://nonexistent-resource-for-conformance-testing", |p| {
        check_not_found(p, "test://nonexistent-resource-for-conformance-testing")
    }),
    // Section 5, prompts.
    ("test_simple_prompt", check_simple_prompt),
    ("test_prompt_with_arguments", check_prompt_with_arguments),
    (
        "test_prompt_with_embedded_resource",
        check_prompt_with_embedded_resource,
    ),
    ("test_prompt_with_image", check_prompt_with_image),
    (
        "test_input_required_result_prompt",
        check_input_required_prompt,
    ),
    // Section 8, MRTR.
    (
        "test_input_required_result_elicitation",
        check_mrtr_elicitation,
    ),
    (
        "test_input_required_result_elicitation / wrong key",
        check_mrtr_wrong_key,
    ),
    (
        "test_input_required_result_elicitation / resultType",
        check_mrtr_result_type,
    ),
    (
        "test_input_required_result_elicitation / extra keys",
        check_mrtr_extra_keys,
    ),
    (
        "test_input_required_result_elicitation / invalid responses",
        check_mrtr_invalid,
    ),
    ("test_input_required_result_sampling", check_mrtr_sampling),
    (
        "test_input_required_result_list_roots",
        check_mrtr_list_roots,
    ),
    (
        "test_input_required_result_request_state",
        check_mrtr_request_state,
    ),
    (
        "test_input_required_result_multiple_inputs",
        check_mrtr_multiple_inputs,
    ),
    (
        "test_input_required_result_multi_round",
        check_mrtr_multi_round,
    ),
    (
        "test_input_required_result_tampered_state",
        check_mrtr_tampered_state,
    ),
    (
        "test_input_required_result_capabilities",
        check_mrtr_capabilities,
    ),
    ("tools/list", |p| {
        check_never_input_required(p, "tools/list")
    }),
    ("prompts/list", |p| {
        check_never_input_required(p, "prompts/list")
    }),
];

// Part A.

fn check_echo(peer: &mut Peer) {
    let tricky = "a\nb\t\"q\" \\ ünï©ødé 😀 \u{0} </script>";
    let result = call_tool(peer, 1, "echo", json!({ "text": tricky }));
    assert_eq!(
        result["content"],
        json!([{ "type": "text", "text": tricky }])
    );
}

fn check_add(peer: &mut Peer) {
    let result = call_tool(peer, 1, "add", json!({ "a": 2.5, "b": 0.25 }));
    assert_eq!(text(&result), "2.75");
    assert_eq!(result["structuredContent"]["sum"].as_f64(), Some(2.75));
    let tool = listed(peer, "tools/list", "tools", "name", "add");
    assert!(
        tool["outputSchema"]["properties"]["sum"].is_object(),
        "{tool}"
    );
}

fn check_slow(peer: &mut Peer) {
    assert_eq!(
        text(&call_tool(peer, 1, "slow", json!({ "ms": 20 }))),
        "done"
    );
    // Cancelled: `stats` soon counts it, and nothing is ever sent for it
    // (the walk ends every check with `finish_quietly`).
    peer.send(&call("s", "slow", json!({ "ms": 60_000 })));
    peer.send(&cancel("s"));
    let deadline = std::time::Instant::now() + WAIT;
    while slow_cancelled(peer) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "slow never saw its cancellation"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(slow_cancelled(peer), 1);
}

fn slow_cancelled(peer: &mut Peer) -> u64 {
    let result = call_tool(peer, 2, "stats", json!({}));
    let stats: Value = serde_json::from_str(text(&result)).unwrap();
    stats["slow_cancelled"].as_u64().unwrap()
}

fn check_progress(peer: &mut Peer) {
    let token = json!("tok");
    let req = with_progress_token(call(1, "progress", json!({ "steps": 4 })), token.clone());
    let (notes, reply) = notes_then_reply(peer, &req);
    complete(&reply);
    let expected: Vec<(f64, Option<f64>)> = (1..=4).map(|n| (n as f64, Some(4.0))).collect();
    assert_eq!(progress_of(&notes, &token), expected);
    // `steps` defaults to 3; an integer token is echoed as well.
    let req = with_progress_token(call(2, "progress", json!({})), json!(7));
    let (notes, _) = notes_then_reply(peer, &req);
    assert_eq!(progress_of(&notes, &json!(7)).len(), 3);
    // Without a token, nothing before the reply.
    call_tool(peer, 3, "progress", json!({ "steps": 2 }));
}

fn check_fail(peer: &mut Peer) {
    let result = call_tool(peer, 1, "fail", json!({}));
    assert_eq!(result["isError"], true);
    assert!(!text(&result).is_empty());
}

fn check_panic(peer: &mut Peer) {
    assert_eq!(
        error_code(&reply_to(peer, &call(1, "panic", json!({})))),
        -32603
    );
    let result = call_tool(peer, 2, "echo", json!({ "text": "still serving" }));
    assert_eq!(text(&result), "still serving");
}

fn check_big(peer: &mut Peer) {
    for bytes in [0, 1, 70_000] {
        let result = call_tool(peer, 1, "big", json!({ "bytes": bytes }));
        assert_eq!(result["content"].as_array().unwrap().len(), 1);
        let text = text(&result);
        assert!(
            text.len() == bytes && text.is_ascii(),
            "{} bytes",
            text.len()
        );
    }
}

fn check_bump(peer: &mut Peer) {
    open(
        peer,
        "counter",
        json!({ "resourceSubscriptions": ["mem://counter"] }),
    );
    let other =
        json!({ "resourceSubscriptions": ["test://static-text"], "toolsListChanged": true });
    open(peer, "other", other);
    assert_eq!(read_contents(peer, 1, "mem://counter")["text"], "0");
    let (reply, notes) = reply_and(peer, &call(2, "bump", json!({})), 1);
    complete(&reply);
    assert_tagged(&notes[0], "notifications/resources/updated", "counter");
    assert_eq!(notes[0]["params"]["uri"], "mem://counter");
    barrier(peer, "nothing for other");
    assert_eq!(read_contents(peer, 3, "mem://counter")["text"], "1");
    close(peer, &["counter", "other"]);
}

fn tool_names(peer: &mut Peer) -> Vec<String> {
    let tools = first_page(peer, 900, "tools/list", "tools");
    tools
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Calls `tool` and asserts it published one tool-list change to `stream`.
fn call_announcing_tools(peer: &mut Peer, id: i64, tool: &str, stream: &str) -> Value {
    let (reply, notes) = reply_and(peer, &call(id, tool, json!({})), 1);
    assert_tagged(&notes[0], "notifications/tools/list_changed", stream);
    complete(&reply).clone()
}

fn check_toggle_tool(peer: &mut Peer) {
    open(peer, "tools", json!({ "toolsListChanged": true }));
    assert!(!tool_names(peer).contains(&"ephemeral".to_owned()));
    call_announcing_tools(peer, 1, "toggle_tool", "tools");
    assert!(tool_names(peer).contains(&"ephemeral".to_owned()));
    call_announcing_tools(peer, 2, "toggle_tool", "tools");
    assert!(!tool_names(peer).contains(&"ephemeral".to_owned()));
    close(peer, &["tools"]);
}

fn check_add_tool(peer: &mut Peer) {
    open(peer, "tools", json!({ "toolsListChanged": true }));
    call_announcing_tools(peer, 1, "add_tool", "tools");
    call_announcing_tools(peer, 2, "add_tool", "tools");
    let names = tool_names(peer);
    assert!(
        names.ends_with(&["dyn_1".to_owned(), "dyn_2".to_owned()]),
        "{names:?}"
    );
    call_tool(peer, 3, "dyn_2", json!({}));
    close(peer, &["tools"]);
}

fn check_end_listen(peer: &mut Peer) {
    open(peer, "a", json!({ "toolsListChanged": true }));
    open(peer, "b", json!({ "promptsListChanged": true }));
    let (reply, finals) = reply_and(peer, &call(1, "end_listen", json!({})), 2);
    complete(&reply);
    for id in ["a", "b"] {
        let end = finals.iter().find(|m| m["id"] == id);
        let end = end.unwrap_or_else(|| panic!("no final result for {id}: {finals:?}"));
        assert_eq!(complete(end)["_meta"][SUBSCRIPTION_ID], id, "{end}");
    }
}

fn check_ask(peer: &mut Peer) {
    let round = first_round(peer, "ask");
    assert_eq!(methods(&round), ["elicitation/create"]);
    let params = &input_requests(&round).values().next().unwrap()["params"];
    assert_eq!(params["mode"], "form");
    assert_eq!(
        params["requestedSchema"]["properties"]["name"]["type"],
        "string"
    );
    let done = next_round(peer, 2, "ask", &round, mock_answers(&round));
    assert!(text(complete(&done)).contains("Alice"), "{done}");
}

fn check_stats(peer: &mut Peer) {
    assert_eq!(slow_cancelled(peer), 0);
}

fn check_counter(peer: &mut Peer) {
    let contents = read_contents(peer, 1, "mem://counter");
    assert_eq!(contents["mimeType"], "text/plain");
    assert_eq!(contents["text"], "0");
    call_tool(peer, 2, "bump", json!({}));
    call_tool(peer, 3, "bump", json!({}));
    assert_eq!(read_contents(peer, 4, "mem://counter")["text"], "2");
    let ack = open(
        peer,
        "sub",
        json!({ "resourceSubscriptions": ["mem://counter"] }),
    );
    let accepted = &ack["params"]["notifications"]["resourceSubscriptions"];
    assert_eq!(accepted, &json!(["mem://counter"]), "subscribable: {ack}");
    close(peer, &["sub"]);
}

fn check_not_found(peer: &mut Peer, uri: &str) {
    let resp = read(peer, 1, uri);
    assert_eq!(error_code(&resp), -32602);
    assert_eq!(resp["error"]["data"]["uri"], uri);
    assert!(resp.get("result").is_none(), "{resp}");
}

fn check_greet(peer: &mut Peer) {
    let prompt = listed(peer, "prompts/list", "prompts", "name", "greet");
    assert_eq!(prompt["arguments"][0]["name"], "name");
    assert_eq!(prompt["arguments"][0]["required"], true);
    let result = get_prompt(peer, 1, "greet", json!({ "name": "Ada" }));
    let messages = result["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1, "{result}");
    assert_eq!(messages[0]["role"], "user");
    assert_eq!(messages[0]["content"]["type"], "text");
    assert!(
        messages[0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("Ada")
    );
}

// Section 3.

fn check_simple_text(peer: &mut Peer) {
    // The suite sends no `arguments` key at all.
    let req = request(1, "tools/call", json!({ "name": "test_simple_text" }));
    let result = complete(&reply_to(peer, &req)).clone();
    assert_eq!(text(&result), "This is a simple text response for testing.");
    call_tool(peer, 2, "test_simple_text", json!({}));
}

fn check_image_content(peer: &mut Peer) {
    let result = call_tool(peer, 1, "test_image_content", json!({}));
    let image = block(&result, "image");
    assert!(is_base64(image["data"].as_str().unwrap()), "{image}");
    assert_eq!(image["mimeType"], "image/png");
}

fn check_audio_content(peer: &mut Peer) {
    let result = call_tool(peer, 1, "test_audio_content", json!({}));
    let audio = block(&result, "audio");
    assert!(is_base64(audio["data"].as_str().unwrap()), "{audio}");
    assert_eq!(audio["mimeType"], "audio/wav");
}

fn check_embedded_resource(peer: &mut Peer) {
    let result = call_tool(peer, 1, "test_embedded_resource", json!({}));
    let resource = &block(&result, "resource")["resource"];
    assert_eq!(resource["uri"], "test://embedded-resource");
    assert_eq!(resource["mimeType"], "text/plain");
    assert_eq!(resource["text"], "This is an embedded resource content.");
}

fn check_multiple_content_types(peer: &mut Peer) {
    let result = call_tool(peer, 1, "test_multiple_content_types", json!({}));
    assert!(non_empty(&block(&result, "text")["text"]));
    assert!(is_base64(block(&result, "image")["data"].as_str().unwrap()));
    let resource = &block(&result, "resource")["resource"];
    assert_eq!(resource["uri"], "test://mixed-content-resource");
    assert_eq!(resource["mimeType"], "application/json");
    let data: Value = serde_json::from_str(resource["text"].as_str().unwrap()).unwrap();
    assert_eq!(data, json!({ "test": "data", "value": 123 }));
}

fn check_error_handling(peer: &mut Peer) {
    // A result, not a JSON-RPC error.
    let result = call_tool(peer, 1, "test_error_handling", json!({}));
    assert_eq!(result["isError"], true);
    assert!(!text(&result).is_empty());
}

fn check_tool_with_progress(peer: &mut Peer) {
    let token = json!("progress-test-1");
    let req = call(1, "test_tool_with_progress", json!({}));
    let (notes, reply) = notes_then_reply(peer, &with_progress_token(req, token.clone()));
    complete(&reply);
    let progress = progress_of(&notes, &token);
    assert!(progress.len() >= 3, "{notes:?}");
    assert!(
        progress.windows(2).all(|w| w[0].0 <= w[1].0),
        "{progress:?}"
    );
}

fn check_missing_capability(peer: &mut Peer) {
    // `call` declares `clientCapabilities: {}`.
    let resp = reply_to(peer, &call(1, "test_missing_capability", json!({})));
    assert_eq!(error_code(&resp), -32021);
    assert_eq!(
        resp["error"]["data"]["requiredCapabilities"]["sampling"],
        json!({})
    );
}

fn check_streaming_elicitation(peer: &mut Peer) {
    // Its reply is the next message: no request to the client before it
    // (and none after: `finish_quietly`).
    let params = tool_params("test_streaming_elicitation");
    let caps = json!({ "elicitation": {} });
    complete(&reply_to(peer, &with_caps(1, "tools/call", params, caps)));
}

fn check_logging_tool(peer: &mut Peer) {
    // Without a logLevel: the reply is the next message, no log before it.
    call_tool(peer, 1, "test_logging_tool", json!({}));
}

/// `tool` publishes `<what>/list_changed` to the stream that asked with
/// `flag`, and not to a stream that asked for the other list.
fn check_trigger(peer: &mut Peer, tool: &str, flag: &str, what: &str) {
    let other = if flag == "toolsListChanged" {
        "promptsListChanged"
    } else {
        "toolsListChanged"
    };
    open(peer, "asked", json!({ flag: true }));
    open(peer, "other", json!({ other: true }));
    let (reply, notes) = reply_and(peer, &call(1, tool, json!({})), 1);
    complete(&reply);
    let method = format!("notifications/{what}/list_changed");
    assert_tagged(&notes[0], &method, "asked");
    barrier(peer, "nothing for other");
    close(peer, &["asked", "other"]);
}

fn check_json_schema_2020_12_tool(peer: &mut Peer) {
    let tool = listed(
        peer,
        "tools/list",
        "tools",
        "name",
        "json_schema_2020_12_tool",
    );
    let schema = &tool["inputSchema"];
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(schema["type"], "object");
    assert!(
        schema["$defs"]["address"]["$anchor"].is_string(),
        "{schema}"
    );
    let properties = &schema["properties"];
    for name in ["name", "phone", "email"] {
        assert!(properties[name].is_object(), "{name}: {schema}");
    }
    assert_eq!(properties["address"], json!({ "$ref": "#/$defs/address" }));
    assert_eq!(
        properties["contactMethod"]["enum"],
        json!(["phone", "email"])
    );
    let any_of = json!([{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }]);
    assert_eq!(schema["allOf"], any_of);
    assert_eq!(
        schema["if"]["properties"]["contactMethod"]["const"],
        "phone"
    );
    assert_eq!(schema["then"], json!({ "required": ["phone"] }));
    assert_eq!(schema["else"], json!({ "required": ["email"] }));
    assert_eq!(schema["additionalProperties"], false);
}

// Section 4.

fn check_static_text(peer: &mut Peer) {
    let listing = listed(
        peer,
        "resources/list",
        "resources",
        "uri",
        "test://static-text",
    );
    assert!(
        non_empty(&listing["name"]) && non_empty(&listing["description"]),
        "{listing}"
    );
    assert_eq!(listing["mimeType"], "text/plain");
    let contents = read_contents(peer, 1, "test://static-text");
    assert_eq!(contents["uri"], "test://static-text");
    assert_eq!(contents["mimeType"], "text/plain");
    assert_eq!(
        contents["text"],
        "This is the content of the static text resource."
    );
}

fn check_static_binary(peer: &mut Peer) {
    let contents = read_contents(peer, 1, "test://static-binary");
    assert_eq!(contents["uri"], "test://static-binary");
    assert!(non_empty(&contents["mimeType"]), "{contents}");
    assert!(is_base64(contents["blob"].as_str().unwrap()), "{contents}");
}

fn check_template(peer: &mut Peer) {
    let contents = read_contents(peer, 1, "test://template/123/data");
    assert_eq!(contents["uri"], "test://template/123/data");
    assert!(
        contents["text"].as_str().unwrap().contains("123"),
        "{contents}"
    );
}

fn check_watched_resource(peer: &mut Peer) {
    let contents = read_contents(peer, 1, "test://watched-resource");
    assert_eq!(contents["mimeType"], "text/plain");
    assert!(non_empty(&contents["text"]), "{contents}");
}

// Section 5 and 6.

fn assert_messages(result: &Value) -> &Vec<Value> {
    let messages = result["messages"].as_array().unwrap();
    assert!(!messages.is_empty(), "{result}");
    for message in messages {
        assert!(
            message["role"].is_string() && message["content"].is_object(),
            "{message}"
        );
    }
    messages
}

fn check_simple_prompt(peer: &mut Peer) {
    let result = get_prompt(peer, 1, "test_simple_prompt", json!({}));
    let messages = assert_messages(&result);
    assert_eq!(
        messages[0]["content"]["text"],
        "This is a simple prompt for testing."
    );
}

fn check_prompt_with_arguments(peer: &mut Peer) {
    let prompt = listed(
        peer,
        "prompts/list",
        "prompts",
        "name",
        "test_prompt_with_arguments",
    );
    let required = prompt["arguments"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["required"] == true);
    assert_eq!(
        required.map(|a| a["name"].clone()).collect::<Vec<_>>(),
        ["arg1", "arg2"]
    );
    let arguments = json!({ "arg1": "testValue1", "arg2": "testValue2" });
    let result = get_prompt(peer, 1, "test_prompt_with_arguments", arguments);
    let serialized = serde_json::to_string(assert_messages(&result)).unwrap();
    assert!(serialized.contains("testValue1") && serialized.contains("testValue2"));
    // Section 6: the completion of `arg1`, with the capability declared.
    let params = json!({
        "ref": { "type": "ref/prompt", "name": "test_prompt_with_arguments" },
        "argument": { "name": "arg1", "value": "test" }
    });
    let resp = reply_to(peer, &request(2, "completion/complete", params));
    assert!(complete(&resp)["completion"]["values"].is_array(), "{resp}");
    let discover = reply_to(peer, &request(3, "server/discover", json!({})));
    assert!(discover["result"]["capabilities"]["completions"].is_object());
}

fn check_prompt_with_embedded_resource(peer: &mut Peer) {
    let uri = "test://example-resource";
    let name = "test_prompt_with_embedded_resource";
    let result = get_prompt(peer, 1, name, json!({ "resourceUri": uri }));
    let messages = assert_messages(&result);
    let embedded = messages.iter().find(|m| m["content"]["type"] == "resource");
    let embedded = embedded.unwrap_or_else(|| panic!("no resource message: {result}"));
    assert_eq!(embedded["content"]["resource"]["uri"], uri);
}

fn check_prompt_with_image(peer: &mut Peer) {
    let result = get_prompt(peer, 1, "test_prompt_with_image", json!({}));
    let messages = assert_messages(&result);
    let image = messages.iter().find(|m| m["content"]["type"] == "image");
    let image = &image.unwrap_or_else(|| panic!("no image message: {result}"))["content"];
    assert!(is_base64(image["data"].as_str().unwrap()) && non_empty(&image["mimeType"]));
}

fn check_input_required_prompt(peer: &mut Peer) {
    let params = json!({ "name": "test_input_required_result_prompt" });
    let round = reply_to(
        peer,
        &with_caps(1, "prompts/get", params.clone(), all_caps()),
    );
    assert_eq!(methods(&round), ["elicitation/create"]);
    let retry = retry_params(&params, &round, mock_answers(&round));
    let done = reply_to(peer, &with_caps(2, "prompts/get", retry, all_caps()));
    assert_messages(complete(&done));
}

// Section 8.

fn check_mrtr_elicitation(peer: &mut Peer) {
    let round = first_round(peer, "test_input_required_result_elicitation");
    let ask = &input_requests(&round)["user_name"];
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(ask["params"]["message"], "What is your name?");
    let schema = &ask["params"]["requestedSchema"];
    assert_eq!(schema["properties"]["name"]["type"], "string");
    assert_eq!(schema["required"], json!(["name"]));
    let answers = json!({ "user_name": { "action": "accept", "content": { "name": "Alice" } } });
    let done = next_round(
        peer,
        2,
        "test_input_required_result_elicitation",
        &round,
        answers,
    );
    assert!(!text(complete(&done)).is_empty());
}

fn check_mrtr_wrong_key(peer: &mut Peer) {
    let tool = "test_input_required_result_elicitation";
    let round = first_round(peer, tool);
    let answers = json!({ "wrong_key": { "action": "accept", "content": { "name": "Alice" } } });
    let again = next_round(peer, 2, tool, &round, answers);
    assert!(input_requests(&again).contains_key("user_name"), "{again}");
}

fn check_mrtr_result_type(peer: &mut Peer) {
    let round = first_round(peer, "test_input_required_result_elicitation");
    assert_eq!(
        round["result"].get("resultType"),
        Some(&json!("input_required"))
    );
}

fn check_mrtr_extra_keys(peer: &mut Peer) {
    let params = json!({
        "name": "test_input_required_result_elicitation",
        "arguments": {},
        "inputResponses": {
            "user_name": { "action": "accept", "content": { "name": "Alice" } },
            "unknown_extra_key": { "anything": [1, 2] },
            "another_unexpected": 42
        }
    });
    let done = reply_to(peer, &with_caps(1, "tools/call", params, all_caps()));
    assert!(!text(complete(&done)).is_empty());
}

fn check_mrtr_invalid(peer: &mut Peer) {
    let tool = "test_input_required_result_elicitation";
    let round = first_round(peer, tool);
    for (id, answers) in [(2, json!({ "user_name": 12345 })), (3, Value::Null)] {
        let resp = next_round(peer, id, tool, &round, answers);
        let asks_again = resp["result"]["resultType"] == "input_required";
        assert!(
            resp.get("error").is_some() || asks_again,
            "not complete: {resp}"
        );
    }
}

fn check_mrtr_sampling(peer: &mut Peer) {
    let tool = "test_input_required_result_sampling";
    mrtr_round_trip(peer, tool, &["sampling/createMessage"]);
}

fn check_mrtr_list_roots(peer: &mut Peer) {
    mrtr_round_trip(
        peer,
        "test_input_required_result_list_roots",
        &["roots/list"],
    );
}

fn check_mrtr_request_state(peer: &mut Peer) {
    let tool = "test_input_required_result_request_state";
    let round = first_round(peer, tool);
    request_state(&round);
    let done = next_round(peer, 2, tool, &round, mock_answers(&round));
    assert!(text(complete(&done)).contains("state-ok"), "{done}");
}

fn check_mrtr_multiple_inputs(peer: &mut Peer) {
    let tool = "test_input_required_result_multiple_inputs";
    let round = first_round(peer, tool);
    request_state(&round);
    let methods = methods(&round);
    assert!(methods.len() >= 3, "{round}");
    for method in ["elicitation/create", "sampling/createMessage", "roots/list"] {
        assert!(methods.contains(&method), "{method} in {round}");
    }
    complete(&next_round(peer, 2, tool, &round, mock_answers(&round)));
}

fn check_mrtr_multi_round(peer: &mut Peer) {
    let tool = "test_input_required_result_multi_round";
    let round1 = first_round(peer, tool);
    let round2 = next_round(peer, 2, tool, &round1, mock_answers(&round1));
    assert_ne!(request_state(&round1), request_state(&round2));
    input_requests(&round2);
    complete(&next_round(peer, 3, tool, &round2, mock_answers(&round2)));
}

fn check_mrtr_tampered_state(peer: &mut Peer) {
    let tool = "test_input_required_result_tampered_state";
    let round = first_round(peer, tool);
    let tampered = format!("{}-TAMPERED", request_state(&round));
    let mut params = retry_params(&tool_params(tool), &round, mock_answers(&round));
    params["requestState"] = json!(tampered);
    let resp = reply_to(peer, &with_caps(2, "tools/call", params, all_caps()));
    assert_eq!(error_code(&resp), -32602);
}

fn check_mrtr_capabilities(peer: &mut Peer) {
    let params = tool_params("test_input_required_result_capabilities");
    let caps = json!({ "sampling": {} });
    let round = reply_to(peer, &with_caps(1, "tools/call", params, caps));
    assert!(
        methods(&round)
            .iter()
            .all(|m| *m == "sampling/createMessage"),
        "{round}"
    );
}

fn check_never_input_required(peer: &mut Peer, method: &str) {
    let resp = reply_to(peer, &with_caps(1, method, json!({}), all_caps()));
    complete(&resp);
}

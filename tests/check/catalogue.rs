//! The catalogue against its sources: every quote is in the spec
//! (`tests/spec/`), every MUST check quotes a MUST, the embedded schemas
//! are the spec's, `CONFORMANCE.md` is what `--list --format markdown`
//! prints, and `--only` and `--skip` select by id and group.

use std::path::Path;

use serde_json::Value;

use crate::Tests;
use crate::support::check;

pub const TESTS: Tests = named![
    every_quote_is_in_the_spec,
    embedded_schemas_are_the_specs,
    conformance_md_is_the_catalogue,
    only_and_skip_select_by_id_and_group,
    review_every_must_check_quotes_a_must,
];

fn every_quote_is_in_the_spec() -> Result<(), String> {
    let run = check(&["--list", "--format", "json"], None);
    let spec = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/spec");
    let mut n = 0;
    for line in run.stdout.lines() {
        let c: Value = serde_json::from_str(line).map_err(|e| format!("{e}: {line}"))?;
        let (page, quote) = (c["page"].as_str().unwrap(), c["quote"].as_str().unwrap());
        let text = match page.split_once('#') {
            Some((file, def)) => {
                let schema: Value = serde_json::from_str(
                    &std::fs::read_to_string(spec.join(file))
                        .map_err(|e| format!("{file}: {e}"))?,
                )
                .unwrap();
                descriptions(&schema["$defs"][def])
            }
            None => std::fs::read_to_string(spec.join(page)).map_err(|e| format!("{page}: {e}"))?,
        };
        if !normalize(&text).contains(&normalize(quote)) {
            return Err(format!("{}: the quote is not in {page}: {quote}", c["id"]));
        }
        n += 1;
    }
    if n < 50 {
        return Err(format!("only {n} checks listed"));
    }
    Ok(())
}

/// Every description in a schema definition (its own and its members'),
/// joined.
fn descriptions(v: &Value) -> String {
    match v {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| match (k.as_str(), v) {
                ("description", Value::String(text)) => text.clone(),
                _ => descriptions(v),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Array(items) => items
            .iter()
            .map(descriptions)
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Markdown as read: emphasis markers and link targets dropped,
/// whitespace collapsed.
fn normalize(text: &str) -> String {
    let text = text.replace("**", "");
    let mut out = String::new();
    let mut rest = text.as_str();
    // [words](target) and [words][ref] become words.
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find(']') {
            Some(close) if matches!(after[close + 1..].chars().next(), Some('(' | '[')) => {
                out.push_str(&after[..close]);
                let tail = &after[close + 1..];
                let end = if tail.starts_with('(') { ')' } else { ']' };
                rest = tail.find(end).map_or("", |e| &tail[e + 1..]);
            }
            _ => {
                out.push('[');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn embedded_schemas_are_the_specs() -> Result<(), String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (spec, embedded) in [
        (
            "tests/spec/2026-07-28/schema.json",
            "src/bin/mcp-stdio/check/schema/2026-07-28.json",
        ),
        (
            "tests/spec/2025-11-25/schema.json",
            "src/bin/mcp-stdio/check/schema/2025-11-25.json",
        ),
        (
            "tests/spec/extensions/tasks/schema.json",
            "src/bin/mcp-stdio/check/schema/tasks.json",
        ),
    ] {
        let read = |p: &str| -> Value {
            serde_json::from_str(&std::fs::read_to_string(root.join(p)).unwrap()).unwrap()
        };
        if strip(&read(spec), false) != read(embedded) {
            return Err(format!("{embedded} is not {spec} without its descriptions"));
        }
    }
    Ok(())
}

/// A schema without its `description` and `$schema` keywords (members of
/// `properties` and `$defs` keep their names, whatever they are).
fn strip(v: &Value, in_map: bool) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| in_map || (k.as_str() != "description" && k.as_str() != "$schema"))
                .map(|(k, v)| {
                    let map_of_schemas = !in_map
                        && matches!(
                            k.as_str(),
                            "properties" | "$defs" | "patternProperties" | "definitions"
                        );
                    (k.clone(), strip(v, map_of_schemas))
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|i| strip(i, false)).collect()),
        other => other.clone(),
    }
}

fn conformance_md_is_the_catalogue() -> Result<(), String> {
    let run = check(&["--list", "--format", "markdown"], None);
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("CONFORMANCE.md"))
        .map_err(|e| format!("CONFORMANCE.md: {e}"))?;
    let (begin, end) = ("<!-- catalogue: begin -->\n", "<!-- catalogue: end -->");
    let start = doc.find(begin).ok_or("no catalogue begin marker")? + begin.len();
    let stop = doc.find(end).ok_or("no catalogue end marker")?;
    if doc[start..stop] != run.stdout {
        return Err("CONFORMANCE.md's catalogue is not what `mcp-stdio check --list --format markdown` prints (regenerate it)".into());
    }
    Ok(())
}

fn only_and_skip_select_by_id_and_group() -> Result<(), String> {
    let run = check(
        &[
            "--list",
            "--format",
            "json",
            "--only",
            "stdio,jsonrpc.id-types",
            "--skip",
            "stdio.sigterm",
        ],
        None,
    );
    let ids: Vec<String> = run
        .stdout
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    if !ids
        .iter()
        .all(|id| id.starts_with("stdio.") || id == "jsonrpc.id-types")
        || ids.contains(&"stdio.sigterm".to_owned())
        || !ids.contains(&"jsonrpc.id-types".to_owned())
    {
        return Err(format!("{ids:?}"));
    }
    let run = check(&["--only", "nosuchgroup", "--", "true"], None);
    if run.status != Some(2) || !run.stderr.contains("no check or group is called") {
        return Err(format!("status {:?}, {}", run.status, run.stderr));
    }
    Ok(())
}

/// CONFORMANCE.md: "Levels are the keyword of the quoted sentence", and a
/// rule without a keyword is a SHOULD. Thirteen MUST checks quote a
/// sentence without one: `stdio.split-write` and `stdio.byte-by-byte`
/// ("The server reads JSON-RPC messages from `stdin` ..."), the nine
/// `schema.*` and `completion.complete` ("This is the source of truth for
/// all protocol messages and structures."), `legacy.set-level` ("A
/// request from the client to the server, to enable or adjust logging.").
fn review_every_must_check_quotes_a_must() -> Result<(), String> {
    let run = check(&["--list", "--format", "json"], None);
    let mut without = Vec::new();
    for line in run.stdout.lines() {
        let c: Value = serde_json::from_str(line).map_err(|e| format!("{e}: {line}"))?;
        if c["level"] == "MUST" && !c["quote"].as_str().unwrap_or_default().contains("MUST") {
            without.push(c["id"].as_str().unwrap_or_default().to_owned());
        }
    }
    if !without.is_empty() {
        return Err(format!(
            "{} MUST checks quote no MUST: {}",
            without.len(),
            without.join(", ")
        ));
    }
    Ok(())
}

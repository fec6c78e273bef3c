//! One run of the whole catalogue per fault: the server breaks one rule,
//! and the checks that did not pass are exactly the ones for that rule
//! (none with no fault).

use std::collections::BTreeSet;

use serde_json::Value;

use crate::Test;
use crate::support::{ASKS, SLOW, TASK, check, this_exe};

/// Each fault, and the checks it must fail (fail or warn), no more.
const FAULTS: &[(&str, &[&str])] = &[
    ("none", &[]),
    ("stdout-log", &["stdio.stdout-only-mcp"]),
    // A message with `1e400` first: JSON the checker cannot read, no fault.
    ("number-past-a-double", &[]),
    // review-check12: a line IgnoredAny reads but that is not JSON (a
    // string of bytes that are not UTF-8), and two that neither reader
    // takes: each a line that is not an MCP message.
    ("invalid-utf8-in-a-string", &["stdio.stdout-only-mcp"]),
    ("trailing-garbage", &["stdio.stdout-only-mcp"]),
    ("two-messages-on-a-line", &["stdio.stdout-only-mcp"]),
    // `1e400` first, then a log line: the log line is the violation.
    ("number-then-log", &["stdio.stdout-only-mcp"]),
    // review-check13: the handshake's results, then every error, with
    // `1e400` in a member no check reads: answers the checker cannot
    // read, no fault (each check that needs their content skips).
    ("unreadable-handshake+past-a-double", &[]),
    ("unreadable-errors+past-a-double", &[]),
    (
        "id-as-string",
        &["jsonrpc.id-types", "jsonrpc.id-large-integer"],
    ),
    ("reply-after-cancel", &["cancel.no-reply-after-cancel"]),
    ("blank-line-hold", &["stdio.blank-line-after"]),
    ("ack-after-event", &["subscriptions.ack-first"]),
    ("schema-break", &["schema.tools-list"]),
    ("no-is-error", &["tools.wrong-arguments"]),
    ("no-parse-error", &["jsonrpc.parse-error"]),
    ("answers-notifications", &["jsonrpc.notification-no-reply"]),
    ("no-exit-on-eof", &["stdio.exit-on-eof"]),
    (
        "unknown-method-result",
        &[
            "jsonrpc.unknown-method-error",
            "jsonrpc.method-not-found",
            "schema.error",
        ],
    ),
    ("any-version", &["lifecycle.unsupported-version"]),
    ("mrtr-empty", &["mrtr.input-required-result"]),
    ("mrtr-undeclared", &["mrtr.undeclared-input-requests"]),
    ("task-get-undeclared", &["tasks.get-undeclared"]),
    ("task-unresolved", &["tasks.created-resolves"]),
    ("task-undeclared", &["tasks.no-task-undeclared"]),
];

/// Runs the whole catalogue against the server with `fault` and compares
/// the checks that did not pass (fail or warn) with `expected`. The slow
/// tool is named last: each check takes the first `--call` that fits it
/// (a complete result, `input_required`, a task, a call still running
/// after 300 ms), and only the cancellation check waits for it (12.5 s a
/// run when it was named first, 5 s now).
fn fault_fails_exactly(fault: &str, expected: &[&str]) -> Result<(), String> {
    let exe = this_exe();
    // Where the cancellation check must see a late reply, the slow tool
    // comes first: a fast one answered after 300 ms on a loaded machine
    // would be cancelled in its stead, its reply crossing the
    // cancellation (a race the spec allows, a pass).
    let [first, second, third] = if fault == "reply-after-cancel" {
        [SLOW, ASKS, TASK]
    } else {
        [TASK, ASKS, SLOW]
    };
    let run = check(
        &[
            "--format", "json", "--call", first, "--call", second, "--call", third, "--", &exe,
        ],
        Some(fault),
    );
    let mut broken = BTreeSet::new();
    let mut levels = Vec::new();
    let mut count = 0;
    for line in run.stdout.lines() {
        let v: Value = serde_json::from_str(line).map_err(|e| format!("not JSON ({e}): {line}"))?;
        if v.get("summary").is_some() {
            continue;
        }
        count += 1;
        let status = v["status"].as_str().unwrap_or_default();
        if v["evidence"].as_array().is_none() {
            return Err(format!("no evidence array: {line}"));
        }
        if status == "fail" || status == "warn" {
            broken.insert(v["id"].as_str().unwrap_or_default().to_owned());
            levels.push(v["level"].as_str().unwrap_or_default().to_owned());
            if v["evidence"].as_array().is_some_and(Vec::is_empty) {
                return Err(format!("{} failed without evidence", v["id"]));
            }
        }
        if status == "fail" && v["level"] != "MUST" {
            return Err(format!(
                "{}: a {} check failed instead of warning",
                v["id"], v["level"]
            ));
        }
    }
    if count < 50 {
        return Err(format!(
            "only {count} checks ran (status {:?}); stderr: {}",
            run.status, run.stderr
        ));
    }
    let expected: BTreeSet<String> = expected.iter().map(|s| (*s).to_owned()).collect();
    if broken != expected {
        let reasons: Vec<String> = run
            .stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| matches!(v["status"].as_str(), Some("fail" | "warn")))
            .map(|v| format!("{} ({}): {}", v["id"], v["status"], v["reason"]))
            .collect();
        return Err(format!(
            "expected {expected:?} to fail, got {broken:?}: {}",
            reasons.join(" | ")
        ));
    }
    let must_failed = levels.iter().any(|l| l == "MUST");
    let want = if must_failed { 1 } else { 0 };
    if run.status != Some(want) {
        return Err(format!("exit status {:?}, expected {want}", run.status));
    }
    Ok(())
}

/// A test per fault, `fault_` and the fault's name.
pub fn tests() -> Vec<(String, Test)> {
    let mut tests: Vec<(String, Test)> = Vec::new();
    for (fault, expected) in FAULTS {
        tests.push((
            format!("fault_{}", fault.replace(['-', '+'], "_")),
            Box::new(move || fault_fails_exactly(fault, expected)),
        ));
    }
    tests
}

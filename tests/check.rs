//! `mcp-stdio check` against a server with one switch per fault: each
//! switch flips one rule of the spec, and the checker must fail exactly
//! the checks that rule is for, and nothing else; with no switch, nothing
//! fails. Then the catalogue: every quote is found in the spec
//! (`tests/spec/`), the embedded schemas are the spec's, `CONFORMANCE.md`
//! is what `--list --format markdown` prints; and the exit statuses and
//! report formats.
//!
//! With `MCP_STDIO_CHECK_FAULT` set, `main` becomes the server: the
//! everything example (its modules compiled in, as `tests/cli.rs` does),
//! its input and output passed through a filter that breaks one rule.
//! `mcp-stdio check` passes its environment to the server it starts.
//!
//! Output: `ok <name>` or `FAILED <name>: <reason>` per test, then
//! `N passed, M failed`. Every run of the checker is bounded (killed
//! after [`LIMIT`]).

#[path = "../examples/everything/conformance.rs"]
mod conformance;
#[path = "../examples/everything/server.rs"]
mod everything;
#[path = "../examples/everything/fixtures.rs"]
mod fixtures;
#[path = "check/http_answers.rs"]
mod http_answers;
#[path = "harness/selection.rs"]
mod selection;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_stdio::Transport;
use selection::Selection;
use serde_json::{Value, json};

const FAULT_ENV: &str = "MCP_STDIO_CHECK_FAULT";
const BIN: &str = env!("CARGO_BIN_EXE_mcp-stdio");
/// The longest one run of the checker may take.
const LIMIT: Duration = Duration::from_secs(120);
/// `--call` for the cancellation check: the everything example's slow
/// tool, slow enough to cancel.
const SLOW: &str = "slow={\"ms\":1500}";
/// `--call` for the MRTR checks: the everything example's tool that asks
/// for the user's name.
const ASKS: &str = "ask";
/// `--call` for the Tasks checks: the everything example's tool that is a
/// task when the client declares the extension.
const TASK: &str = "slow_compute={\"seconds\":0}";

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

/// One test: `Err` says what went wrong.
type Test = Box<dyn Fn() -> Result<(), String> + Send + Sync>;

/// One of review-45's tests.
type ReviewTest = fn() -> Result<(), String>;

/// The tests that take longest (each line of a run says how long each
/// took): a server that stops answering costs three deadlines and a
/// process's startup wait (24 s), and two faults wait out the checker's
/// own timeouts (17 s; most take 13 s, twelve at a time).
const LONGEST_FIRST: &[&str] = &[
    "review_a_server_that_stops_answering_does_not_cost_every_checks_deadline",
    "fault_blank_line_hold",
    "fault_no_exit_on_eof",
];

fn main() {
    if let Ok(fault) = std::env::var(FAULT_ENV) {
        serve_with_fault(&fault);
    }
    let sel = Selection::from_args(std::env::args().skip(1));
    let mut tests: Vec<(String, Test)> = Vec::new();
    for (fault, expected) in FAULTS {
        tests.push((
            format!("fault_{}", fault.replace(['-', '+'], "_")),
            Box::new(move || fault_fails_exactly(fault, expected)),
        ));
    }
    tests.push((
        "every_quote_is_in_the_spec".into(),
        Box::new(every_quote_is_in_the_spec),
    ));
    tests.push((
        "embedded_schemas_are_the_specs".into(),
        Box::new(embedded_schemas_are_the_specs),
    ));
    tests.push((
        "conformance_md_is_the_catalogue".into(),
        Box::new(conformance_md_is_the_catalogue),
    ));
    tests.push((
        "a_server_that_stops_reading_costs_each_check_its_deadline".into(),
        Box::new(a_server_that_stops_reading_costs_each_check_its_deadline),
    ));
    tests.push((
        "a_server_that_floods_its_output_costs_each_wait_its_time".into(),
        Box::new(a_server_that_floods_its_output_costs_each_wait_its_time),
    ));
    tests.push((
        "a_server_slow_to_start_is_waited_for".into(),
        Box::new(a_server_slow_to_start_is_waited_for),
    ));
    tests.push((
        "a_server_that_cannot_start_is_status_2".into(),
        Box::new(a_server_that_cannot_start_is_status_2),
    ));
    tests.push((
        "junit_report_has_a_case_per_check".into(),
        Box::new(junit_report_has_a_case_per_check),
    ));
    tests.push((
        "only_and_skip_select_by_id_and_group".into(),
        Box::new(only_and_skip_select_by_id_and_group),
    ));
    // review-45: each fails on main as merged (the report says what it
    // showed and the fix it asks for).
    let review: &[(&str, ReviewTest)] = &[
        (
            "review_a_late_answer_is_not_taken_for_a_later_checks",
            review_a_late_answer_is_not_taken_for_a_later_checks,
        ),
        (
            "review_a_line_longer_than_the_checkers_limit_is_not_a_violation",
            review_a_line_longer_than_the_checkers_limit_is_not_a_violation,
        ),
        (
            "review_a_stderr_flood_leaves_the_lines_sent_and_received_in_the_evidence",
            review_a_stderr_flood_leaves_the_lines_sent_and_received_in_the_evidence,
        ),
        (
            "review_a_server_answering_every_request_with_another_id_is_status_1",
            review_a_server_answering_every_request_with_another_id_is_status_1,
        ),
        (
            "review_a_server_with_nothing_to_listen_to_is_skipped_not_failed",
            review_a_server_with_nothing_to_listen_to_is_skipped_not_failed,
        ),
        (
            "review_a_call_naming_a_tool_the_server_does_not_list_fails_no_must",
            review_a_call_naming_a_tool_the_server_does_not_list_fails_no_must,
        ),
        (
            "review_every_must_check_quotes_a_must",
            review_every_must_check_quotes_a_must,
        ),
        (
            "review_an_http_server_that_holds_its_body_costs_each_request_the_wait",
            review_an_http_server_that_holds_its_body_costs_each_request_the_wait,
        ),
        (
            "review_cancellation_is_checked_when_it_runs_alone",
            review_cancellation_is_checked_when_it_runs_alone,
        ),
        (
            "review_a_list_of_more_than_100_pages_is_not_a_violation",
            review_a_list_of_more_than_100_pages_is_not_a_violation,
        ),
        (
            "review_an_error_the_spec_allows_is_not_a_schema_violation",
            review_an_error_the_spec_allows_is_not_a_schema_violation,
        ),
        (
            "review_a_result_type_outside_the_protocols_set_fails",
            review_a_result_type_outside_the_protocols_set_fails,
        ),
        (
            "review_a_session_id_never_given_is_not_a_terminated_session",
            review_a_session_id_never_given_is_not_a_terminated_session,
        ),
        (
            "a_urls_secrets_are_not_in_the_report",
            a_urls_secrets_are_not_in_the_report,
        ),
        (
            "review_a_log_line_before_the_legacy_handshake_fails_stdout_only_mcp",
            review_a_log_line_before_the_legacy_handshake_fails_stdout_only_mcp,
        ),
        (
            "a_number_past_a_double_is_json_the_checker_cannot_read_not_a_violation",
            a_number_past_a_double_is_json_the_checker_cannot_read_not_a_violation,
        ),
        // review-check10: each fails on main as it was.
        (
            "review_an_sse_event_that_never_ends_costs_bounded_memory",
            review_an_sse_event_that_never_ends_costs_bounded_memory,
        ),
        (
            "review_a_tool_schema_that_refers_to_itself_gets_a_verdict_in_time",
            review_a_tool_schema_that_refers_to_itself_gets_a_verdict_in_time,
        ),
        (
            "review_tool_names_in_a_call_refusal_cannot_drive_the_terminal",
            review_tool_names_in_a_call_refusal_cannot_drive_the_terminal,
        ),
        (
            "review_a_server_that_answers_after_a_bom_is_reached_and_fails",
            review_a_server_that_answers_after_a_bom_is_reached_and_fails,
        ),
        // review-check-bounds10: each fails on main as it was.
        (
            "review_a_list_whose_pages_never_end_costs_bounded_memory",
            review_a_list_whose_pages_never_end_costs_bounded_memory,
        ),
        (
            "review_messages_before_a_listens_acknowledgment_cost_bounded_memory",
            review_messages_before_a_listens_acknowledgment_cost_bounded_memory,
        ),
        (
            "review_c1_and_bidi_controls_in_json_and_junit_reports_are_escaped",
            review_c1_and_bidi_controls_in_json_and_junit_reports_are_escaped,
        ),
        (
            "review_a_server_that_stops_answering_does_not_cost_every_checks_deadline",
            review_a_server_that_stops_answering_does_not_cost_every_checks_deadline,
        ),
        // review-check12: each fails on main as it was.
        (
            "review_an_unreadable_line_says_the_readers_own_reason",
            review_an_unreadable_line_says_the_readers_own_reason,
        ),
        (
            "review_answers_that_are_not_utf8_fail_the_handshake_not_unreachable",
            review_answers_that_are_not_utf8_fail_the_handshake_not_unreachable,
        ),
        (
            "review_a_miss_after_the_server_spoke_says_the_time_it_waited",
            review_a_miss_after_the_server_spoke_says_the_time_it_waited,
        ),
        // review-check13: each fails on main as it was.
        (
            "review_an_unreadable_handshake_answer_is_an_answer_not_unreachable",
            review_an_unreadable_handshake_answer_is_an_answer_not_unreachable,
        ),
        (
            "review_an_unreadable_list_answer_is_a_skip_not_no_answer",
            review_an_unreadable_list_answer_is_a_skip_not_no_answer,
        ),
        (
            "review_an_unreadable_error_is_a_skip_not_no_answer",
            review_an_unreadable_error_is_a_skip_not_no_answer,
        ),
        // review-check13's review: each fails on check13 as it was.
        (
            "review_an_unreadable_result_where_an_error_is_due_fails",
            review_an_unreadable_result_where_an_error_is_due_fails,
        ),
        (
            "review_an_array_holding_an_id_is_not_an_answer",
            review_an_array_holding_an_id_is_not_an_answer,
        ),
        (
            "review_an_unreadable_error_over_http_is_a_skip_as_over_stdio",
            review_an_unreadable_error_over_http_is_a_skip_as_over_stdio,
        ),
        (
            "an_http_check_judges_a_malformed_answer_as_the_session_does",
            http_answers::an_http_check_judges_a_malformed_answer_as_the_session_does,
        ),
        (
            "an_http_check_judges_a_malformed_answer_in_an_event_stream_too",
            http_answers::an_http_check_judges_a_malformed_answer_in_an_event_stream_too,
        ),
        (
            "review_an_unreadable_error_where_a_result_is_due_fails",
            review_an_unreadable_error_where_a_result_is_due_fails,
        ),
        (
            "review_a_prompt_list_the_checker_cannot_read_is_not_said_to_be_empty",
            review_a_prompt_list_the_checker_cannot_read_is_not_said_to_be_empty,
        ),
        (
            "review_a_call_answered_unreadably_is_not_said_to_be_unanswered",
            review_a_call_answered_unreadably_is_not_said_to_be_unanswered,
        ),
        (
            "review_a_line_the_checker_cannot_read_that_is_no_object_is_a_violation",
            review_a_line_the_checker_cannot_read_that_is_no_object_is_a_violation,
        ),
        // check14: each fails on main as it was.
        (
            "an_unreadable_discover_beside_a_readable_initialize_is_checked_in_the_legacy_era",
            an_unreadable_discover_beside_a_readable_initialize_is_checked_in_the_legacy_era,
        ),
        (
            "a_malformed_answer_is_named_not_taken_for_silence",
            a_malformed_answer_is_named_not_taken_for_silence,
        ),
        (
            "each_check_that_calls_a_tool_takes_the_first_call_that_fits_it",
            each_check_that_calls_a_tool_takes_the_first_call_that_fits_it,
        ),
        // review of check14: each fails on main as it was.
        (
            "review_call_result_passes_over_a_call_not_answered_in_time",
            review_call_result_passes_over_a_call_not_answered_in_time,
        ),
        (
            "review_the_lists_of_a_legacy_checked_server_are_its_legacy_lists",
            review_the_lists_of_a_legacy_checked_server_are_its_legacy_lists,
        ),
        (
            "review_no_tool_named_with_call_is_called_more_often_than_the_catalogue_says",
            review_no_tool_named_with_call_is_called_more_often_than_the_catalogue_says,
        ),
        (
            "review_a_malformed_handshake_answer_beside_a_good_one_fails_a_check",
            review_a_malformed_handshake_answer_beside_a_good_one_fails_a_check,
        ),
    ];
    for &(name, test) in review {
        tests.push((name.into(), Box::new(test)));
    }
    let mut tests: Vec<_> = tests
        .into_iter()
        .filter(|(name, _)| sel.includes(name))
        .collect();
    // The longest start first, so that the others run beside them rather
    // than after them.
    tests.sort_by_key(|(name, _)| !LONGEST_FIRST.contains(&name.as_str()));
    if sel.list {
        for (name, _) in &tests {
            println!("{name}: test");
        }
        return;
    }
    // Twelve at a time: each run is mostly waiting (67 s of wall clock
    // for 14 s of CPU four at a time; 37 s eight at a time, the sum of
    // the runs 270 s, in the ninth session).
    let results = Mutex::new(Vec::new());
    let next = Mutex::new(tests.iter());
    std::thread::scope(|scope| {
        for _ in 0..12 {
            scope.spawn(|| {
                loop {
                    let Some((name, test)) = next.lock().unwrap().next() else {
                        return;
                    };
                    let began = Instant::now();
                    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(test))
                        .unwrap_or_else(|_| Err("panicked".into()));
                    let took = began.elapsed().as_secs_f64();
                    match &outcome {
                        Ok(()) => println!("ok {name} ({took:.1} s)"),
                        Err(e) => println!("FAILED {name} ({took:.1} s): {e}"),
                    }
                    results.lock().unwrap().push(outcome.is_ok());
                }
            });
        }
    });
    let results = results.into_inner().unwrap();
    let passed = results.iter().filter(|ok| **ok).count();
    let failed = results.len() - passed;
    println!("{passed} passed, {failed} failed");
    std::process::exit(i32::from(failed > 0));
}

// ---------------------------------------------------------------------------
// Running the checker
// ---------------------------------------------------------------------------

struct Run {
    status: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `mcp-stdio check ARGS`, with `fault` in its environment; killed
/// after [`LIMIT`].
fn check(args: &[&str], fault: Option<&str>) -> Run {
    check_within(args, fault, LIMIT)
}

/// Runs `mcp-stdio check ARGS`, with `fault` in its environment; killed
/// after `limit` (its status is then `None`).
fn check_within(args: &[&str], fault: Option<&str>, limit: Duration) -> Run {
    let mut command = Command::new(BIN);
    command
        .arg("check")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match fault {
        Some(fault) => command.env(FAULT_ENV, fault),
        None => command.env_remove(FAULT_ENV),
    };
    let mut child = command.spawn().expect("mcp-stdio starts");
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

fn this_exe() -> String {
    std::env::current_exe()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

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

/// A server that stops reading after its first lines: every check ends
/// within its deadline, the run ends, and no server process is left.
fn a_server_that_stops_reading_costs_each_check_its_deadline() -> Result<(), String> {
    let exe = this_exe();
    let token = format!("stops-reading:{}", std::process::id());
    let began = Instant::now();
    let run = check(
        &[
            "--format",
            "json",
            "--wait",
            "2",
            "--deadline",
            "1",
            "--only",
            "jsonrpc,stdio.byte-by-byte",
            "--",
            &exe,
        ],
        Some(&token),
    );
    let took = began.elapsed();
    let failed = run
        .stdout
        .lines()
        .filter(|l| l.contains("no verdict within the check's deadline"))
        .count();
    if run.status != Some(1) || failed < 1 || took > Duration::from_secs(60) {
        return Err(format!(
            "status {:?}, {failed} failed, {:.1} s: {}",
            run.status,
            took.as_secs_f64(),
            run.stderr
        ));
    }
    // Every process that carried the token is gone.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = processes_with(&format!("{FAULT_ENV}={token}"));
        if left.is_empty() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("server processes left behind: {left:?}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A server that writes long lines faster than the checker reads them and
/// answers nothing: each wait still ends at its deadline (a receive that
/// finds a message never looked at the deadline, so the first wait never
/// ended), and the run says the server could not be reached.
fn a_server_that_floods_its_output_costs_each_wait_its_time() -> Result<(), String> {
    let began = Instant::now();
    let run = check(
        &[
            "--wait",
            "2",
            "--only",
            "jsonrpc.id-types",
            "--",
            &this_exe(),
        ],
        Some("flood"),
    );
    let took = began.elapsed();
    if run.status != Some(2) || took > Duration::from_secs(60) {
        return Err(format!(
            "status {:?} after {:.1} s: {}",
            run.status,
            took.as_secs_f64(),
            run.stderr
        ));
    }
    Ok(())
}

/// A server that takes longer to say its first line than `--wait` (a
/// Python or `npx` server on a loaded machine) is waited for, not taken
/// for one that does not answer: both eras found, the check passes.
fn a_server_slow_to_start_is_waited_for() -> Result<(), String> {
    let run = check(
        &[
            "--wait",
            "1",
            "--only",
            "jsonrpc.id-types",
            "--",
            &this_exe(),
        ],
        Some("slow-start"),
    );
    if run.status != Some(0)
        || !run.stdout.contains("modern: yes")
        || !run.stdout.contains("legacy: yes")
        || !run.stdout.contains("pass  MUST    jsonrpc.id-types")
    {
        return Err(format!(
            "status {:?}: {}{}",
            run.status, run.stdout, run.stderr
        ));
    }
    Ok(())
}

/// The pids of the processes whose environment holds `entry`.
fn processes_with(entry: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == entry.as_bytes()))
        })
        .collect()
}

fn a_server_that_cannot_start_is_status_2() -> Result<(), String> {
    let run = check(&["--", "/nonexistent/mcp-server"], None);
    if run.status != Some(2) || !run.stderr.contains("was not found") {
        return Err(format!("status {:?}, stderr {:?}", run.status, run.stderr));
    }
    // A program that exits at once speaks no era.
    let run = check(&["--wait", "1", "--", "true"], None);
    if run.status != Some(2) || !run.stderr.contains("speaks no MCP era") {
        return Err(format!(
            "true: status {:?}, stderr {:?}",
            run.status, run.stderr
        ));
    }
    Ok(())
}

fn junit_report_has_a_case_per_check() -> Result<(), String> {
    let exe = this_exe();
    let run = check(
        &[
            "--format",
            "junit",
            "--only",
            "jsonrpc,stdio.stdout-only-mcp",
            "--",
            &exe,
        ],
        Some("stdout-log"),
    );
    let cases = run.stdout.matches("<testcase ").count();
    let failures = run.stdout.matches("<failure ").count();
    if cases != 9
        || failures != 1
        || !run.stdout.contains("failures=\"1\"")
        || run.status != Some(1)
    {
        return Err(format!(
            "{cases} cases, {failures} failures, status {:?}: {}",
            run.status, run.stdout
        ));
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

// ---------------------------------------------------------------------------
// review-45: claims of the hostile review, each a test that fails on main
// as merged
// ---------------------------------------------------------------------------

/// The per-check objects of a `--format json` run (the summary left out).
fn outcomes(run: &Run) -> Vec<Value> {
    run.stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("summary").is_none())
        .collect()
}

/// The outcome of check `id` in a `--format json` run.
fn outcome(run: &Run, id: &str) -> Result<Value, String> {
    outcomes(run)
        .into_iter()
        .find(|v| v["id"] == id)
        .ok_or_else(|| {
            format!(
                "{id} did not run (status {:?}): {}{}",
                run.status, run.stdout, run.stderr
            )
        })
}

/// Every check that failed (a MUST), with its reason.
fn failed(run: &Run) -> Vec<String> {
    outcomes(run)
        .iter()
        .filter(|v| v["status"] == "fail")
        .map(|v| format!("{}: {}", v["id"], v["reason"]))
        .collect()
}

/// A server whose answer to an unknown method comes 2.5 s late (past
/// `--wait 2`): `jsonrpc.method-not-found` warns, rightly. But the shared
/// session is kept, and the late answer is then read as the answer to the
/// next check's request: `jsonrpc.id-types` fails ("sent the id 0, the
/// response came back with N") and `jsonrpc.notification-no-reply` fails
/// ("a response to a notification"), two MUSTs the server keeps.
fn review_a_late_answer_is_not_taken_for_a_later_checks() -> Result<(), String> {
    let exe = this_exe();
    let mut wrong = Vec::new();
    for second in ["jsonrpc.id-types", "jsonrpc.notification-no-reply"] {
        let only = format!("jsonrpc.parse-error,jsonrpc.method-not-found,{second}");
        let run = check(
            &[
                "--format", "json", "--wait", "2", "--only", &only, "--", &exe,
            ],
            Some("slow-unknown-method"),
        );
        let late = outcome(&run, "jsonrpc.method-not-found")?;
        if late["status"] != "warn" {
            return Err(format!("the unknown method was not late: {late}"));
        }
        let checked = outcome(&run, second)?;
        if checked["status"] != "pass" {
            wrong.push(format!(
                "{second}: {} ({})",
                checked["status"], checked["reason"]
            ));
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong.join(" | "))
    }
}

/// A server whose tools/list answer is one valid line of 5 MiB (a long
/// description): the checker cuts lines at 4 MiB, reads the cut line as
/// not JSON, so never as the answer, and fails `stdio.stdout-only-mcp`
/// and `tools.list` ("tools/list: no answer within 2.0 s"), two MUSTs
/// the server keeps (the spec sets no limit
/// on a line). A line past the checker's own limit is the checker's
/// limit: a skip that says so, never a violation.
fn review_a_line_longer_than_the_checkers_limit_is_not_a_violation() -> Result<(), String> {
    let run = check(
        &[
            "--format",
            "json",
            "--wait",
            "2",
            "--only",
            "stdio.stdout-only-mcp,tools.list",
            "--",
            &this_exe(),
        ],
        Some("huge-tools-list"),
    );
    let failed = failed(&run);
    if !failed.is_empty() || outcomes(&run).len() != 2 {
        return Err(format!("status {:?}: {}", run.status, failed.join(" | ")));
    }
    Ok(())
}

/// A server that writes to stderr without pause (the spec: the server MAY
/// write to stderr "for any logging purposes") and echoes ids out of
/// range as strings: `jsonrpc.id-types` fails, rightly, but its evidence
/// is the 400 stderr lines the transcript keeps, and not one of the lines
/// the checker sent or received ("with its evidence: the lines sent and
/// received").
fn review_a_stderr_flood_leaves_the_lines_sent_and_received_in_the_evidence() -> Result<(), String>
{
    let run = check(
        &[
            "--format",
            "json",
            "--only",
            "jsonrpc.parse-error,jsonrpc.id-types",
            "--",
            &this_exe(),
        ],
        Some("stderr-flood+id-as-string"),
    );
    let ids = outcome(&run, "jsonrpc.id-types")?;
    if ids["status"] != "fail" {
        return Err(format!("id-types did not fail: {ids}"));
    }
    let evidence = ids["evidence"].as_array().cloned().unwrap_or_default();
    let count = |kind: &str| evidence.iter().filter(|e| e["kind"] == kind).count();
    if count("sent") == 0 || count("received") == 0 {
        return Err(format!(
            "{} evidence lines: {} sent, {} received, {} stderr",
            evidence.len(),
            count("sent"),
            count("received"),
            count("stderr")
        ));
    }
    Ok(())
}

/// A server that answers every request, each with its id as a string
/// ("1" for 1): it was started and reached, and it breaks a MUST ("Result
/// responses MUST include the same ID as the request"). The checker exits
/// 2, "could not be started or reached", saying "no answer within 1.0 s".
fn review_a_server_answering_every_request_with_another_id_is_status_1() -> Result<(), String> {
    let run = check(
        &[
            "--wait",
            "1",
            "--only",
            "jsonrpc.id-types",
            "--",
            &this_exe(),
        ],
        Some("id-always-string"),
    );
    if run.status != Some(1) {
        return Err(format!(
            "status {:?}: {}{}",
            run.status, run.stdout, run.stderr
        ));
    }
    Ok(())
}

/// A modern server that declares nothing to listen to (no listChanged, no
/// subscribe) and does not implement subscriptions/listen, answering it
/// as it answers every unknown method, -32602 (a SHOULD broken, which
/// jsonrpc.method-not-found warns about): no sentence of the spec makes
/// subscriptions/listen a MUST, and the catalogue's rule is "a check that
/// needs a capability ... the server does not offer is a skip". The
/// checker fails `subscriptions.ack-first` (a MUST).
fn review_a_server_with_nothing_to_listen_to_is_skipped_not_failed() -> Result<(), String> {
    let run = check(
        &[
            "--format",
            "json",
            "--only",
            "subscriptions",
            "--",
            &this_exe(),
        ],
        Some("no-listen"),
    );
    let failed = failed(&run);
    if !failed.is_empty() || run.status != Some(0) {
        return Err(format!("status {:?}: {}", run.status, failed.join(" | ")));
    }
    Ok(())
}

/// `--call` naming a tool the server does not list (a typo of the user's)
/// fails `tools.call-result`, a MUST ("Servers MUST provide structured
/// results that conform to this schema"), and the run exits 1: the
/// server is blamed for the command line.
fn review_a_call_naming_a_tool_the_server_does_not_list_fails_no_must() -> Result<(), String> {
    let run = check(
        &[
            "--format",
            "json",
            "--only",
            "tools.call-result",
            "--call",
            "no_such_tool",
            "--",
            &this_exe(),
        ],
        Some("none"),
    );
    let failed = failed(&run);
    if !failed.is_empty() || run.status == Some(1) {
        return Err(format!("status {:?}: {}", run.status, failed.join(" | ")));
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

/// An HTTP server that sends a response's head and then holds its body
/// (Content-Length: 100, nothing more): each POST of the checker's link
/// waits 60 s for it whatever `--wait` says (`http_link::HttpLink::post`
/// opens with a fixed 60 s), and `Facts::gather` runs on the main thread
/// with no deadline: `--wait 1` takes two minutes to say "could not be
/// reached".
fn review_an_http_server_that_holds_its_body_costs_each_request_the_wait() -> Result<(), String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n",
            );
            held.push(stream);
        }
    });
    let began = Instant::now();
    let run = check_within(
        &["--wait", "1", "--url", &url],
        None,
        Duration::from_secs(60),
    );
    let took = began.elapsed();
    if run.status != Some(2) || took > Duration::from_secs(30) {
        return Err(format!(
            "status {:?} after {:.1} s: {}",
            run.status,
            took.as_secs_f64(),
            run.stderr
        ));
    }
    Ok(())
}

/// `cancel.no-reply-after-cancel` run alone (`--only cancel`) on a server
/// that answers a cancelled call: the shared session is new, so its
/// "still running after 300 ms?" wait is stretched to the 15 s a server
/// process is given for its first line; the slow call's answer (1.5 s)
/// comes within it, and the check skips, "answered within 300 ms, too
/// fast to cancel": it cannot fail when it runs first on a session.
fn review_cancellation_is_checked_when_it_runs_alone() -> Result<(), String> {
    let run = check(
        &[
            "--format",
            "json",
            "--only",
            "cancel",
            "--call",
            SLOW,
            "--",
            &this_exe(),
        ],
        Some("reply-after-cancel"),
    );
    let cancel = outcome(&run, "cancel.no-reply-after-cancel")?;
    if cancel["status"] != "fail" || run.status != Some(1) {
        return Err(format!(
            "status {:?}: {} ({})",
            run.status, cancel["status"], cancel["reason"]
        ));
    }
    Ok(())
}

/// A server that lists 150 tools one a page (a gateway in front of many
/// servers, a small page size): `list_all` stops at 100 pages with an
/// error, and `tools.list` fails, a MUST, though the server answered
/// every page and the spec bounds neither pages nor tools.
fn review_a_list_of_more_than_100_pages_is_not_a_violation() -> Result<(), String> {
    let run = check(
        &[
            "--format",
            "json",
            "--only",
            "tools.list",
            "--",
            &this_exe(),
        ],
        Some("many-pages"),
    );
    let list = outcome(&run, "tools.list")?;
    if list["status"] != "pass" {
        return Err(format!("{} ({})", list["status"], list["reason"]));
    }
    Ok(())
}

/// A server whose listed resource cannot be read just now (-32603: "Servers
/// SHOULD return -32603 for internal errors", resources.md), whose prompt
/// fails (-32603, prompts.md's "Internal errors") and whose completion
/// needs the other arguments first (-32602, completion.md's "Missing
/// required arguments"): each answer is one the spec names, yet
/// `schema.resources-read`, `schema.prompts-get` and `completion.complete`
/// fail as MUSTs ("answered with error ..."). An error is not a result
/// that breaks the schema (`schema.error` checks errors).
fn review_an_error_the_spec_allows_is_not_a_schema_violation() -> Result<(), String> {
    let run = check(
        &[
            "--format",
            "json",
            "--only",
            "schema.resources-read,schema.prompts-get,completion.complete",
            "--",
            &this_exe(),
        ],
        Some("errors-not-results"),
    );
    let failed = failed(&run);
    if !failed.is_empty() || outcomes(&run).len() != 3 {
        return Err(format!("status {:?}: {}", run.status, failed.join(" | ")));
    }
    Ok(())
}

/// A server whose every result says `"resultType": "done"`: basic/index.md
/// "The set of supported `ResultType` values **MUST** be created from the
/// set defined in the core protocol and include any additional values of
/// supported extensions that are advertised via capabilities" ("complete",
/// "input_required"; "task" with the Tasks extension), and a client
/// "**MUST**" take any other as invalid. `lifecycle.result-type` passes
/// any string: it cannot fail on a value.
fn review_a_result_type_outside_the_protocols_set_fails() -> Result<(), String> {
    let run = check(
        &[
            "--format",
            "json",
            "--only",
            "lifecycle.result-type",
            "--",
            &this_exe(),
        ],
        Some("result-type-unknown"),
    );
    let checked = outcome(&run, "lifecycle.result-type")?;
    if checked["status"] != "fail" {
        return Err(format!("{} ({})", checked["status"], checked["reason"]));
    }
    Ok(())
}

/// A legacy server that writes "Server starting on stdio..." on stdout
/// before anything else (the commonest break of "The server MUST NOT
/// write anything to its stdout that is not a valid MCP message"):
/// `stdio.stdout-only-mcp` starts its fresh legacy server with
/// `Session::start`, whose `initialize` drops whatever came before its
/// answer, so the check never sees the line and passes ("2 lines, each a
/// JSON-RPC message", the line in its own evidence). The `stdout-log`
/// fault is caught only because the everything example is modern.
fn review_a_log_line_before_the_legacy_handshake_fails_stdout_only_mcp() -> Result<(), String> {
    let run = check(
        &[
            "--format",
            "json",
            "--era",
            "legacy",
            "--only",
            "stdio.stdout-only-mcp",
            "--",
            &this_exe(),
        ],
        Some("stdout-log"),
    );
    let checked = outcome(&run, "stdio.stdout-only-mcp")?;
    if checked["status"] != "fail" || run.status != Some(1) {
        return Err(format!(
            "status {:?}: {} ({})",
            run.status, checked["status"], checked["reason"]
        ));
    }
    Ok(())
}

/// A server that writes a message with the number `1e400` in it: JSON
/// (RFC 8259 section 6 lets a reader refuse a number past a double's
/// range, as serde_json does, but the text is JSON), and a valid MCP
/// message. `stdio.stdout-only-mcp` failed it as "not JSON" (note10); a
/// line the checker cannot read is the checker's limit, as a line past
/// its length is: a skip that says which number, never a violation.
fn a_number_past_a_double_is_json_the_checker_cannot_read_not_a_violation() -> Result<(), String> {
    let run = check(
        &[
            "--format",
            "json",
            "--only",
            "stdio.stdout-only-mcp",
            "--",
            &this_exe(),
        ],
        Some("number-past-a-double"),
    );
    let checked = outcome(&run, "stdio.stdout-only-mcp")?;
    let reason = checked["reason"].as_str().unwrap_or_default();
    if checked["status"] != "skip" || !reason.contains("number out of range") {
        return Err(format!(
            "status {:?}: {} ({reason})",
            run.status, checked["status"]
        ));
    }
    Ok(())
}

/// Lines serde_json's `Value` refuses and `IgnoredAny` reads, for other
/// reasons than a number past a double's range: nesting deeper than 128
/// (RFC 8259 section 9 lets a reader limit it) and a lone surrogate
/// (section 8.2: unpredictable). A skip is the checker's limit, but its
/// reason said "RFC 8259 section 6 lets a reader refuse a number past a
/// double's range" for each (review-check12).
fn review_an_unreadable_line_says_the_readers_own_reason() -> Result<(), String> {
    for (fault, says) in [
        ("nested-past-128", "recursion limit"),
        ("lone-surrogate", "surrogate"),
    ] {
        let run = check(
            &[
                "--format",
                "json",
                "--only",
                "stdio.stdout-only-mcp",
                "--",
                &this_exe(),
            ],
            Some(fault),
        );
        let checked = outcome(&run, "stdio.stdout-only-mcp")?;
        let reason = checked["reason"].as_str().unwrap_or_default();
        if checked["status"] != "skip"
            || !reason.contains(says)
            || reason.contains("section 6 lets a reader refuse a number")
        {
            return Err(format!("{fault}: {} ({reason})", checked["status"]));
        }
    }
    Ok(())
}

/// A server whose handshake answers (the `server/discover` and
/// `initialize` results) hold, in a member no check reads, JSON
/// serde_json's `Value` refuses: `1e400`, a lone surrogate, nesting past
/// 128. The server answered; the checker read no id from the line
/// (`Msg::Unreadable`), so it said "no answer" and the run was status 2,
/// "could not be reached" (review-check13). Now: a check that needs the
/// handshake's content skips and names the reader's limit, one that
/// needs only an answer passes, and the run is status 0.
fn review_an_unreadable_handshake_answer_is_an_answer_not_unreachable() -> Result<(), String> {
    let exe = this_exe();
    for (fault, era, needs_content, says) in [
        (
            "unreadable-handshake+past-a-double",
            "modern",
            "lifecycle.discover",
            "number out of range",
        ),
        (
            "unreadable-handshake+lone-surrogate",
            "modern",
            "lifecycle.discover",
            "surrogate",
        ),
        (
            "unreadable-handshake+nested-past-128",
            "modern",
            "lifecycle.discover",
            "recursion limit",
        ),
        (
            "unreadable-handshake+past-a-double",
            "legacy",
            "legacy.initialize",
            "number out of range",
        ),
    ] {
        let only = format!("{needs_content},stdio.split-write");
        let run = check(
            &[
                "--format", "json", "--wait", "2", "--era", era, "--only", &only, "--", &exe,
            ],
            Some(fault),
        );
        let content = outcome(&run, needs_content)?;
        let reason = content["reason"].as_str().unwrap_or_default();
        let answered = outcome(&run, "stdio.split-write")?;
        if run.status != Some(0)
            || content["status"] != "skip"
            || !reason.contains(says)
            || answered["status"] != "pass"
        {
            return Err(format!(
                "{fault} ({era}): status {:?}; {needs_content} {} ({reason}); stdio.split-write {} ({})",
                run.status, content["status"], answered["status"], answered["reason"]
            ));
        }
    }
    Ok(())
}

/// A server whose `tools/list` result holds `1e400` in a member no check
/// reads: `tools.list` failed with "no answer within 2.0 s" and so did
/// `stdio.stdout-only-mcp` (its typical traffic lists the tools), MUSTs
/// the server keeps (review-check13). Each is a skip that names the
/// reader's limit.
fn review_an_unreadable_list_answer_is_a_skip_not_no_answer() -> Result<(), String> {
    let run = check(
        &[
            "--format",
            "json",
            "--wait",
            "2",
            "--only",
            "tools.list,stdio.stdout-only-mcp",
            "--",
            &this_exe(),
        ],
        Some("unreadable-tools-list+past-a-double"),
    );
    for id in ["tools.list", "stdio.stdout-only-mcp"] {
        let checked = outcome(&run, id)?;
        let reason = checked["reason"].as_str().unwrap_or_default();
        if checked["status"] != "skip" || !reason.contains("number out of range") {
            return Err(format!(
                "status {:?}; {id} {} ({reason})",
                run.status, checked["status"]
            ));
        }
    }
    if run.status != Some(0) {
        return Err(format!(
            "status {:?}: {}",
            run.status,
            failed(&run).join(" | ")
        ));
    }
    Ok(())
}

/// A server whose errors hold `1e400` in a member no check reads: a
/// check that needs the error's code cannot read it, a skip, not "no
/// answer" (review-check13).
fn review_an_unreadable_error_is_a_skip_not_no_answer() -> Result<(), String> {
    let run = check(
        &[
            "--format",
            "json",
            "--wait",
            "2",
            "--only",
            "jsonrpc.method-not-found",
            "--",
            &this_exe(),
        ],
        Some("unreadable-errors+past-a-double"),
    );
    let checked = outcome(&run, "jsonrpc.method-not-found")?;
    let reason = checked["reason"].as_str().unwrap_or_default();
    if run.status != Some(0)
        || checked["status"] != "skip"
        || !reason.contains("number out of range")
    {
        return Err(format!(
            "status {:?}; {} ({reason})",
            run.status, checked["status"]
        ));
    }
    Ok(())
}

/// A server that answers an unknown method with a result (not the
/// -32601 error a MUST asks for) holding `1e400`: the checker cannot read
/// the result, but it reads that it is a result (`Answer::Unreadable`'s
/// `error: false`), and a result is not an error whatever it holds. The
/// checks that need an error skipped ("it answered with a result, but a
/// line of JSON the checker cannot read"): a server dodged a MUST with
/// one number (review of check13).
fn review_an_unreadable_result_where_an_error_is_due_fails() -> Result<(), String> {
    let run = check(
        &[
            "--format",
            "json",
            "--wait",
            "2",
            "--only",
            "jsonrpc.unknown-method-error,jsonrpc.method-not-found",
            "--",
            &this_exe(),
        ],
        Some("unknown-method-unreadable-result"),
    );
    for id in ["jsonrpc.unknown-method-error", "jsonrpc.method-not-found"] {
        let checked = outcome(&run, id)?;
        let status = checked["status"].as_str().unwrap_or_default();
        if !matches!(status, "fail" | "warn") {
            return Err(format!(
                "status {:?}; {id} {status} ({})",
                run.status, checked["reason"]
            ));
        }
    }
    if run.status != Some(1) {
        return Err(format!("status {:?}", run.status));
    }
    Ok(())
}

/// A legacy server that answers `ping` (an empty result is due, a MUST)
/// with an error holding `1e400` in its data: the checker reads that it
/// is an error, and an error is not the empty result due. `legacy.ping`
/// skipped ("it answered with an error, but a line of JSON the checker
/// cannot read") (review of check13).
fn review_an_unreadable_error_where_a_result_is_due_fails() -> Result<(), String> {
    let run = check(
        &[
            "--format",
            "json",
            "--wait",
            "2",
            "--era",
            "legacy",
            "--only",
            "legacy.ping",
            "--",
            &this_exe(),
        ],
        Some("empty-results-unreadable-errors"),
    );
    let checked = outcome(&run, "legacy.ping")?;
    if checked["status"] != "fail" || run.status != Some(1) {
        return Err(format!(
            "status {:?}; {} ({})",
            run.status, checked["status"], checked["reason"]
        ));
    }
    Ok(())
}

/// A server whose `prompts/list` result holds `1e400`: the list is
/// unknown (`Facts::unlisted`), but `schema.prompts-get` read it as
/// empty and skipped saying "every prompt listed has a required
/// argument": a reason that is not so (review of check13); so did
/// `completion.complete` ("no prompt argument or template variable to
/// complete") on a server with no template to complete (this one has
/// one: it passes). The skip names the reader's limit.
fn review_a_prompt_list_the_checker_cannot_read_is_not_said_to_be_empty() -> Result<(), String> {
    let run = check(
        &[
            "--format",
            "json",
            "--wait",
            "2",
            "--only",
            "schema.prompts-get",
            "--",
            &this_exe(),
        ],
        Some("unreadable-prompts-list+past-a-double"),
    );
    let checked = outcome(&run, "schema.prompts-get")?;
    let reason = checked["reason"].as_str().unwrap_or_default();
    if checked["status"] != "skip" || !reason.contains("number out of range") {
        return Err(format!(
            "status {:?}; {} ({reason})",
            run.status, checked["status"]
        ));
    }
    Ok(())
}

/// A server whose `input_required` results hold `1e400`: the tool named
/// with `--call ask` answered, but `mrtr.input-required-result` skipped
/// with "no tool named with --call answered input_required (ask: no
/// answer)" (review of check13). The skip names the reader's limit.
fn review_a_call_answered_unreadably_is_not_said_to_be_unanswered() -> Result<(), String> {
    let run = check(
        &[
            "--format",
            "json",
            "--wait",
            "2",
            "--call",
            ASKS,
            "--only",
            "mrtr.input-required-result",
            "--",
            &this_exe(),
        ],
        Some("unreadable-input-required+past-a-double"),
    );
    let checked = outcome(&run, "mrtr.input-required-result")?;
    let reason = checked["reason"].as_str().unwrap_or_default();
    if checked["status"] != "skip"
        || !reason.contains("number out of range")
        || reason.contains("no answer")
    {
        return Err(format!(
            "status {:?}; {} ({reason})",
            run.status, checked["status"]
        ));
    }
    Ok(())
}

/// A server whose first line is `1e400` alone, then `[1e400]`: JSON the
/// checker cannot read, but no reading of it is a JSON-RPC message (a
/// message is an object), and "The server MUST NOT write anything to its
/// stdout that is not a valid MCP message". `stdio.stdout-only-mcp`
/// skipped as for the checker's limit (review of check13).
fn review_a_line_the_checker_cannot_read_that_is_no_object_is_a_violation() -> Result<(), String> {
    for fault in ["bare-number-past-a-double", "array-past-a-double"] {
        let run = check(
            &[
                "--format",
                "json",
                "--only",
                "stdio.stdout-only-mcp",
                "--",
                &this_exe(),
            ],
            Some(fault),
        );
        let checked = outcome(&run, "stdio.stdout-only-mcp")?;
        if checked["status"] != "fail" || run.status != Some(1) {
            return Err(format!(
                "{fault}: status {:?}; {} ({})",
                run.status, checked["status"], checked["reason"]
            ));
        }
    }
    Ok(())
}

/// A dual-era server whose `server/discover` result holds `1e400` in a
/// member no check reads, and whose `initialize` result the checker
/// reads: the modern era was the one checked, its capabilities unknown,
/// so `tools.list` skipped ("whether the server offers tools is
/// unknown") and the legacy era's readable answers went unused (review
/// of check13). The era whose handshake was read is checked, the summary
/// says which, and `lifecycle.discover` still names the reader's limit.
fn an_unreadable_discover_beside_a_readable_initialize_is_checked_in_the_legacy_era()
-> Result<(), String> {
    let run = check(
        &[
            "--format",
            "json",
            "--wait",
            "2",
            "--only",
            "tools.list,lifecycle.discover",
            "--",
            &this_exe(),
        ],
        Some("unreadable-discover+past-a-double"),
    );
    let listed = outcome(&run, "tools.list")?;
    let discover = outcome(&run, "lifecycle.discover")?;
    let reason = discover["reason"].as_str().unwrap_or_default();
    let summary = run
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|v| v.get("summary").cloned())
        .unwrap_or_default();
    if run.status != Some(0)
        || listed["status"] != "pass"
        || discover["status"] != "skip"
        || !reason.contains("number out of range")
        || summary["era"] != "legacy"
    {
        return Err(format!(
            "status {:?}; tools.list {} ({}); lifecycle.discover {} ({reason}); summary {summary}",
            run.status, listed["status"], listed["reason"], discover["status"]
        ));
    }
    Ok(())
}

/// A server that speaks both eras, whose `server/discover` answer the
/// checker cannot read (`1e400`), and whose modern era lists no tools
/// while its legacy era lists them all. The legacy era is checked (its
/// handshake was read), but `Facts::gather` read the lists on the modern
/// session it kept from the probe: `--call echo` was refused as naming a
/// tool the server does not list (status 2), though the era checked
/// lists it (review of check14).
fn review_the_lists_of_a_legacy_checked_server_are_its_legacy_lists() -> Result<(), String> {
    let run = check(
        &[
            "--format",
            "json",
            "--wait",
            "2",
            "--call",
            "echo={\"text\":\"x\"}",
            "--only",
            "tools.call-result",
            "--",
            &this_exe(),
        ],
        Some("unreadable-discover+modern-lists-nothing+past-a-double"),
    );
    let checked = outcome(&run, "tools.call-result");
    match checked {
        Ok(c) if run.status == Some(0) && c["status"] == "pass" => Ok(()),
        _ => Err(format!(
            "status {:?}; {checked:?}; stderr {}",
            run.status,
            run.stderr.trim()
        )),
    }
}

/// `tools.call-result` takes "the first named tool that answers with a
/// complete result" (check14), but a first `--call` slower than `--wait`
/// (the slow tool `cancel.no-reply-after-cancel` asks for, named first as
/// CONFORMANCE.md's example does) failed the MUST ("no answer within
/// 1.0 s"), a rule about the result's schema that a slow tool does not
/// break, though the next `--call` answers with a complete result at
/// once (review of check14).
fn review_call_result_passes_over_a_call_not_answered_in_time() -> Result<(), String> {
    let run = check(
        &[
            "--format",
            "json",
            "--wait",
            "1",
            "--call",
            "slow={\"ms\":4000}",
            "--call",
            "echo={\"text\":\"x\"}",
            "--only",
            "tools",
            "--",
            &this_exe(),
        ],
        Some("none"),
    );
    let checked = outcome(&run, "tools.call-result")?;
    let reason = checked["reason"].as_str().unwrap_or_default();
    if run.status != Some(0) || checked["status"] != "pass" || !reason.starts_with("echo") {
        return Err(format!(
            "status {:?}; tools.call-result {} ({reason})",
            run.status, checked["status"]
        ));
    }
    Ok(())
}

/// A server whose `tools/list` answer is malformed: `result` twice
/// (RFC 8259: an object's names SHOULD be unique; readers differ on which
/// they keep), `id` twice, or `"result": null` (a result is an object),
/// each beside `1e400` but the first. The first was taken as the answer
/// (serde_json keeps the last `result`), the others were "no answer
/// within 2.0 s" (the checker read no id from them): `tools.list` fails
/// naming the defect, at once (review of check13).
fn a_malformed_answer_is_named_not_taken_for_silence() -> Result<(), String> {
    for (fault, says) in [
        ("tools-list-result-twice", "`result` twice"),
        ("tools-list-result-twice+past-a-double", "`result` twice"),
        ("tools-list-id-twice+past-a-double", "`id` twice"),
        ("tools-list-null-result+past-a-double", "`result` is null"),
    ] {
        let run = check(
            &[
                "--format",
                "json",
                "--wait",
                "2",
                "--only",
                "tools.list",
                "--",
                &this_exe(),
            ],
            Some(fault),
        );
        let checked = outcome(&run, "tools.list")?;
        let reason = checked["reason"].as_str().unwrap_or_default();
        if run.status != Some(1)
            || checked["status"] != "fail"
            || !reason.contains("malformed")
            || !reason.contains(says)
            || reason.contains("no answer")
        {
            return Err(format!(
                "{fault}: status {:?}; tools.list {} ({reason})",
                run.status, checked["status"]
            ));
        }
    }
    Ok(())
}

/// A server that speaks both eras and answers one handshake malformed
/// (`result` twice) and the other well: the malformed answer was taken
/// for "this era is not spoken" (`no_modern`, `no_legacy`), the other
/// era checked, and every check that would have met it skipped ("the
/// server is not modern"): the run passed (status 0), where the same
/// answer to `tools/list` fails `tools.list`, and a server that speaks
/// only the malformed era is status 1 (review of check14).
fn review_a_malformed_handshake_answer_beside_a_good_one_fails_a_check() -> Result<(), String> {
    for fault in ["discover-result-twice", "initialize-result-twice"] {
        let run = check(
            &["--format", "json", "--wait", "2", "--", &this_exe()],
            Some(fault),
        );
        let named = outcomes(&run).into_iter().find(|o| {
            o["status"] == "fail"
                && o["reason"]
                    .as_str()
                    .is_some_and(|r| r.contains("malformed"))
        });
        if run.status != Some(1) || named.is_none() {
            let skipped: Vec<String> = outcomes(&run)
                .iter()
                .filter(|o| {
                    o["reason"]
                        .as_str()
                        .is_some_and(|r| r.contains("malformed"))
                })
                .map(|o| format!("{} {}", o["id"], o["status"]))
                .collect();
            return Err(format!(
                "{fault}: status {:?}, no check fails naming it (those that name it: {skipped:?})",
                run.status
            ));
        }
    }
    Ok(())
}

/// CONFORMANCE.md (and `--help`): "a tool named with `--call` may be
/// called up to six times in a run". Each check that looks for the first
/// `--call` that fits it calls every tool named before that one too
/// (check14 made `tools.call-result` and `cancel.no-reply-after-cancel`
/// such checks), and the two mrtr and the two tasks checks each look on
/// their own: `ask`, named first, was called seven times (review of
/// check14). The bound is read from CONFORMANCE.md.
fn review_no_tool_named_with_call_is_called_more_often_than_the_catalogue_says()
-> Result<(), String> {
    let catalogue =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("CONFORMANCE.md"))
            .map_err(|e| e.to_string())?;
    let said = catalogue
        .split("may be called up to ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .ok_or("CONFORMANCE.md names no bound")?;
    let words = [
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    ];
    let bound = words
        .iter()
        .position(|w| *w == said)
        .ok_or(format!("a bound in words: {said}"))?
        + 1;
    let dir = std::env::temp_dir().join(format!("mcp-check-calls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let log = dir.join("calls");
    let _ = std::fs::remove_file(&log);
    let fault = format!("count-calls:{}", log.display());
    let run = check(
        &[
            "--format",
            "json",
            "--call",
            ASKS,
            "--call",
            "echo={\"text\":\"x\"}",
            "--call",
            SLOW,
            "--",
            &this_exe(),
        ],
        Some(&fault),
    );
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    // The calls with the arguments given (not `tools.wrong-arguments`'
    // refused ones).
    let given = [
        "ask {}".to_owned(),
        r#"echo {"text":"x"}"#.to_owned(),
        format!("slow {}", SLOW.trim_start_matches("slow=")),
    ];
    let mut counts = BTreeMap::new();
    for call in calls.lines().filter(|c| given.iter().any(|g| g == c)) {
        *counts.entry(call.to_owned()).or_insert(0) += 1;
    }
    if counts.values().any(|n| *n > bound) || run.status.is_none() {
        return Err(format!(
            "status {:?}; calls by tool: {counts:?}; CONFORMANCE.md says up to {bound}",
            run.status
        ));
    }
    Ok(())
}

/// `--call ask --call slow`: `tools.call-result` took the first, which
/// needs elicitation (error -32021 to a client that does not declare it),
/// and failed; `cancel.no-reply-after-cancel` took the first too, which
/// answers at once, and skipped ("too fast to cancel"). Each takes the
/// first `--call` that fits it, as the mrtr and tasks checks do: the
/// slow tool, which gives a complete result and can be cancelled (and
/// the fault runs name it last, so that only the cancellation check
/// waits for it).
fn each_check_that_calls_a_tool_takes_the_first_call_that_fits_it() -> Result<(), String> {
    let run = check(
        &[
            "--format",
            "json",
            "--call",
            ASKS,
            "--call",
            SLOW,
            "--only",
            "tools.call-result,cancel.no-reply-after-cancel",
            "--",
            &this_exe(),
        ],
        Some("none"),
    );
    for id in ["tools.call-result", "cancel.no-reply-after-cancel"] {
        let checked = outcome(&run, id)?;
        if checked["status"] != "pass" {
            return Err(format!(
                "status {:?}; {id} {} ({})",
                run.status, checked["status"], checked["reason"]
            ));
        }
    }
    Ok(())
}

/// A server that answers an unknown method with a JSON array, not a
/// JSON-RPC message: `[ID, null, {"code": -32601, ..., "data": 1e400}]`.
/// `Msg::unreadable_response` read it with a derived `Deserialize`, which
/// takes a struct from an array as well as from an object (its fields in
/// order): the array was "an error" answering ID, and
/// `jsonrpc.method-not-found` skipped. It is no answer (review of
/// check13).
fn review_an_array_holding_an_id_is_not_an_answer() -> Result<(), String> {
    let run = check(
        &[
            "--format",
            "json",
            "--wait",
            "1",
            "--only",
            "jsonrpc.method-not-found",
            "--",
            &this_exe(),
        ],
        Some("unknown-method-array"),
    );
    let checked = outcome(&run, "jsonrpc.method-not-found")?;
    let reason = checked["reason"].as_str().unwrap_or_default();
    if checked["status"] != "warn" || reason.contains("it answered with an error") {
        return Err(format!(
            "status {:?}; {} ({reason})",
            run.status, checked["status"]
        ));
    }
    Ok(())
}

/// A modern Streamable HTTP server whose errors hold `1e400` in `data`
/// (its unknown-method answer: HTTP 404 and that error). Over the
/// session (`jsonrpc.method-not-found`) the answer is read for its id and
/// kind, and the check skips, as over stdio; but `http.unknown-method-404`
/// reads the body with `Value` only (`http_link::exchange`): "no JSON-RPC
/// response", a MUST failed for the checker's limit (review of check13).
fn review_an_unreadable_error_over_http_is_a_skip_as_over_stdio() -> Result<(), String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            std::thread::spawn(move || unreadable_errors_http_exchange(stream));
        }
    });
    let run = check(
        &[
            "--format",
            "json",
            "--wait",
            "2",
            "--only",
            "http.unknown-method-404,jsonrpc.method-not-found",
            "--url",
            &url,
        ],
        None,
    );
    for id in ["http.unknown-method-404", "jsonrpc.method-not-found"] {
        let checked = outcome(&run, id)?;
        let reason = checked["reason"].as_str().unwrap_or_default();
        if checked["status"] != "skip" || !reason.contains("number out of range") {
            return Err(format!(
                "status {:?}; {id} {} ({reason})",
                run.status, checked["status"]
            ));
        }
    }
    Ok(())
}

/// One request to the modern HTTP server above: `server/discover`
/// answered, a notification accepted, anything else HTTP 404 and -32601
/// with `1e400` in its data.
fn unreadable_errors_http_exchange(stream: std::net::TcpStream) {
    use std::io::BufRead;
    let mut reader = BufReader::new(&stream);
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (status, text) = if message["method"] == "server/discover" {
        let result = json!({ "resultType": "complete", "supportedVersions": ["2026-07-28"],
            "capabilities": {},
            "_meta": { "io.modelcontextprotocol/serverInfo": { "name": "unreadable-errors", "version": "1" } } });
        (
            "200 OK",
            json!({ "jsonrpc": "2.0", "id": message["id"], "result": result }).to_string(),
        )
    } else if message.get("id").is_none() {
        ("202 Accepted", String::new())
    } else {
        (
            "404 Not Found",
            format!(
                r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":-32601,"message":"Method not found","data":1e400}}}}"#,
                message["id"]
            ),
        )
    };
    let kind = if text.is_empty() {
        ""
    } else {
        "Content-Type: application/json\r\n"
    };
    let _ = (&stream).write_all(
        format!(
            "HTTP/1.1 {status}\r\n{kind}Content-Length: {}\r\nConnection: close\r\n\r\n{text}",
            text.len()
        )
        .as_bytes(),
    );
}

/// A server each of whose results holds a string whose bytes are not
/// UTF-8 (`"caf\xe9"`): not JSON (RFC 8259 section 8.1: JSON text
/// MUST be UTF-8), and MCP messages MUST be UTF-8. `IgnoredAny` reads it
/// (it does not look at a string's bytes), so the answers were
/// `Unreadable`, not a response: the handshake "did not answer", status 2
/// (unreachable), where it was status 1, a MUST broken, before 0530a7d
/// (review-check12).
fn review_answers_that_are_not_utf8_fail_the_handshake_not_unreachable() -> Result<(), String> {
    let run = check(
        &[
            "--wait",
            "1",
            "--only",
            "stdio.stdout-only-mcp",
            "--",
            &this_exe(),
        ],
        Some("answers-invalid-utf8"),
    );
    if run.status != Some(1) {
        return Err(format!("status {:?}: {}", run.status, run.stderr.trim()));
    }
    Ok(())
}

/// A server that writes a line at once (here an answer that is not
/// UTF-8) and then no answer: the wait ends at `--wait` (1 s), since the
/// server has spoken, but the miss said "no answer within 15.0 s", the
/// startup wait it did not get (4ae632b took it before the wait began;
/// review-check12).
fn review_a_miss_after_the_server_spoke_says_the_time_it_waited() -> Result<(), String> {
    let began = Instant::now();
    let run = check(
        &[
            "--wait",
            "1",
            "--only",
            "stdio.stdout-only-mcp",
            "--",
            &this_exe(),
        ],
        Some("answers-invalid-utf8"),
    );
    if began.elapsed() < Duration::from_secs(15) && run.stderr.contains("within 15.0 s") {
        return Err(format!(
            "took {:.1} s: {}",
            began.elapsed().as_secs_f64(),
            run.stderr.trim()
        ));
    }
    Ok(())
}

/// A legacy Streamable HTTP server as the Python SDK 1.x's session manager
/// answers: a request with a session id it never gave gets `400 Bad
/// Request: No valid session ID provided`. The sentence
/// `http.legacy-unknown-session` quotes ("The server MAY terminate the
/// session at any time, after which it MUST respond to requests
/// containing that session ID with HTTP 404 Not Found") is about a
/// session the server ended; 2025-11-25 says nothing of an id it never
/// gave. The checker fails it as a MUST.
fn review_a_session_id_never_given_is_not_a_terminated_session() -> Result<(), String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            std::thread::spawn(move || legacy_http_exchange(stream));
        }
    });
    let run = check(
        &[
            "--format",
            "json",
            "--wait",
            "1",
            "--only",
            "http.legacy-unknown-session",
            "--url",
            &url,
        ],
        None,
    );
    let checked = outcome(&run, "http.legacy-unknown-session")?;
    if checked["status"] == "fail" {
        return Err(format!("{} ({})", checked["status"], checked["reason"]));
    }
    Ok(())
}

/// Issue 46, item 5: the report named the server by its `--url` whole,
/// query included (the JSON summary's `"server"`, the transcript's
/// "checking URL"), and so did the refusal of a port that is not a
/// number.
fn a_urls_secrets_are_not_in_the_report() -> Result<(), String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            std::thread::spawn(move || legacy_http_exchange(stream));
        }
    });
    let secret = format!("{url}?key=Q-SECRET");
    let run = check(
        &[
            "--format",
            "json",
            "--wait",
            "1",
            "--only",
            "http.legacy-unknown-session",
            "--url",
            &secret,
        ],
        None,
    );
    outcome(&run, "http.legacy-unknown-session")?;
    let summary = format!("\"server\":\"{url}\"");
    if run.stdout.contains("Q-SECRET") || run.stderr.contains("Q-SECRET") {
        return Err(format!("the URL's query in: {}{}", run.stdout, run.stderr));
    }
    if !run.stdout.contains(&summary) {
        return Err(format!("no {summary} in: {}", run.stdout));
    }
    let bad_port = check(&["--url", "http://127.0.0.1:x/mcp?key=Q-SECRET"], None);
    if bad_port.stderr.contains("Q-SECRET") || !bad_port.stderr.contains("the port is not a number")
    {
        return Err(format!("status {:?}: {}", bad_port.status, bad_port.stderr));
    }
    Ok(())
}

/// The peak resident memory of a running process, in KiB (`VmHWM`).
fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Waits for `child`, killed after 60 s, looking at its peak resident
/// memory meanwhile: its exit code (`None` if killed) and that peak (KiB).
fn wait_watching_peak(child: &mut std::process::Child) -> (Option<i32>, u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut peak = 0;
    loop {
        if let Some(kib) = peak_kib(child.id()) {
            peak = peak.max(kib);
        }
        if let Some(status) = child.try_wait().unwrap() {
            return (status.code(), peak);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return (None, peak);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// review-check10: an HTTP server that answers a POST with an SSE stream
/// of `data:` lines and never the blank line that ends the event: the
/// checker's SSE reader (`http_link::sse`) bounds each line (4 MiB) but
/// keeps every line of the event, so its memory grows as fast as the
/// server writes (here 768 MiB in 1 MiB lines, then silence).
fn review_an_sse_event_that_never_ends_costs_bounded_memory() -> Result<(), String> {
    use std::io::BufRead;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    if let Some(n) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = n.trim().parse().unwrap_or(0);
                    }
                    if line.trim().is_empty() {
                        break;
                    }
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                let mut stream = stream;
                let _ =
                    stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n");
                let mut line = b"data: ".to_vec();
                line.extend(std::iter::repeat_n(b'x', 1 << 20));
                line.push(b'\n');
                for _ in 0..768 {
                    if stream.write_all(&line).is_err() {
                        return;
                    }
                }
                // Then nothing, until the checker lets go.
                let _ = stream.read(&mut [0; 1]);
            });
        }
    });
    let mut child = Command::new(BIN)
        .args(["check", "--era", "modern", "--wait", "5", "--url", &url])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let (status, peak) = wait_watching_peak(&mut child);
    if peak > 256 << 10 || status != Some(2) {
        return Err(format!(
            "status {status:?}, peak resident memory {} MiB",
            peak >> 10
        ));
    }
    Ok(())
}

/// review-check10: a tool whose input schema refers to itself in two
/// branches of a `oneOf` (`{"oneOf": [{"$ref": "#"}, {"$ref": "#"}]}`,
/// valid JSON Schema). The validator (`schema.rs`) bounds its depth (64)
/// but not its work: every `oneOf` probes both branches, 2^64 walks, so
/// `tools.wrong-arguments` never comes back; the runner then blames the
/// server ("the server stopped answering"), and the check's thread spins
/// on a CPU until the run ends. The deadline is three times the 10 s it
/// was: the capped walk takes about 5 s of a debug build's CPU, and 10.2 s
/// in one CI run whose two CPUs had other work (11th session).
fn review_a_tool_schema_that_refers_to_itself_gets_a_verdict_in_time() -> Result<(), String> {
    let run = check(
        &[
            "--format",
            "json",
            "--deadline",
            "30",
            "--only",
            "tools.wrong-arguments",
            "--",
            &this_exe(),
        ],
        Some("schema-bomb"),
    );
    let checked = outcome(&run, "tools.wrong-arguments")?;
    let reason = checked["reason"].as_str().unwrap_or_default();
    if reason.contains("no verdict within the check's deadline") {
        return Err(format!("{} ({reason})", checked["status"]));
    }
    Ok(())
}

/// review-check10: `--call` naming a tool the server does not list is
/// refused with the names it lists, written to stderr as the server sent
/// them (`check::unlisted_call`): a tool named with an escape sequence
/// (OSC 0, the window's title) drives the user's terminal.
fn review_tool_names_in_a_call_refusal_cannot_drive_the_terminal() -> Result<(), String> {
    let run = check(
        &["--call", "no_such_tool", "--", &this_exe()],
        Some("evil-tool-name"),
    );
    if run.status != Some(2) || !run.stderr.contains("no such tool") {
        return Err(format!("status {:?}: {}", run.status, run.stderr));
    }
    if run.stderr.contains('\u{1b}') || run.stderr.contains('\u{7}') {
        return Err(format!(
            "raw control characters on stderr: {:?}",
            run.stderr
        ));
    }
    Ok(())
}

/// review-check10: a server that writes each answer after a byte order
/// mark (not JSON: "The server MUST NOT write anything to its stdout
/// that is not a valid MCP message") was reached and broke a MUST. The
/// checker said "no answer within 2.0 s" for both eras and exited 2,
/// "could not be started or reached", its status for a server that is
/// not there.
fn review_a_server_that_answers_after_a_bom_is_reached_and_fails() -> Result<(), String> {
    let run = check(
        &[
            "--wait",
            "2",
            "--only",
            "jsonrpc.id-types",
            "--",
            &this_exe(),
        ],
        Some("bom"),
    );
    if run.status != Some(1) || !run.stderr.contains("not a JSON-RPC message") {
        return Err(format!("status {:?}: {}", run.status, run.stderr));
    }
    Ok(())
}

/// Runs `mcp-stdio check ARGS` against this executable as the server
/// with `fault`, killed after 60 s: its status, its peak resident memory
/// (KiB) and its stdout.
fn check_peak(args: &[&str], fault: &str) -> (Option<i32>, u64, String) {
    let mut child = Command::new(BIN)
        .arg("check")
        .args(args)
        .args(["--", &this_exe()])
        .env(FAULT_ENV, fault)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("mcp-stdio starts");
    let mut stdout = child.stdout.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let (status, peak) = wait_watching_peak(&mut child);
    (status, peak, out.join().unwrap())
}

/// review-check-bounds10: a server whose `tools/list` always has a next
/// page (a new cursor each time), each page one tool of 4 MiB: `list_all`
/// keeps every item until the deadline (Facts::gather's, then the
/// check's), so the checker's memory grows as fast as the server writes
/// (gigabytes with the default 20 s deadline). Bounded, the list is cut at
/// the checker's limit, which is not the server's fault.
fn review_a_list_whose_pages_never_end_costs_bounded_memory() -> Result<(), String> {
    let (status, peak, stdout) = check_peak(
        &[
            "--format",
            "json",
            "--era",
            "modern",
            "--wait",
            "2",
            "--deadline",
            "6",
            "--only",
            "tools.list",
        ],
        "endless-pages",
    );
    let run = Run {
        status,
        stdout,
        stderr: String::new(),
    };
    let list = outcome(&run, "tools.list")?;
    if peak > 256 << 10 || list["status"] == "fail" {
        return Err(format!(
            "status {status:?}, peak resident memory {} MiB; tools.list: {} ({})",
            peak >> 10,
            list["status"],
            list["reason"]
        ));
    }
    Ok(())
}

/// review-check-bounds10: a server that answers `subscriptions/listen`
/// with 300 notifications of 1 MiB on the subscription, then the
/// acknowledgment: `subscriptions::open` keeps every message before the
/// acknowledgment (its text and its parsed value), 600 MiB, though the
/// check looks at the first one only.
fn review_messages_before_a_listens_acknowledgment_cost_bounded_memory() -> Result<(), String> {
    let (status, peak, stdout) = check_peak(
        &[
            "--format",
            "json",
            "--era",
            "modern",
            "--wait",
            "20",
            "--deadline",
            "40",
            "--only",
            "subscriptions.ack-first",
        ],
        "listen-flood",
    );
    let run = Run {
        status,
        stdout,
        stderr: String::new(),
    };
    let ack = outcome(&run, "subscriptions.ack-first")?;
    let reason = ack["reason"].as_str().unwrap_or_default();
    if peak > 256 << 10 || ack["status"] != "fail" || !reason.contains("before the acknowledgment")
    {
        return Err(format!(
            "status {status:?}, peak resident memory {} MiB; ack-first: {} ({reason})",
            peak >> 10,
            ack["status"]
        ));
    }
    Ok(())
}

/// review-check-bounds10: a tool named with a C1 control (U+009B, the
/// one-byte CSI: `\u{9b}2J` clears a terminal that takes C1 controls) and a
/// bidi override (U+202E), and a tool result with the same text for an
/// unknown tool (a warning): JSON escapes neither character, so `--format
/// json` wrote them raw in the evidence (the lines received), and the
/// JUnit report in the warning's reason and evidence; a person who `cat`s
/// the report has their terminal driven.
fn review_c1_and_bidi_controls_in_json_and_junit_reports_are_escaped() -> Result<(), String> {
    let raw = |c: char| matches!(c, '\u{80}'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    for format in ["json", "junit"] {
        let run = check(
            &[
                "--format",
                format,
                "--era",
                "modern",
                "--only",
                "tools.list,tools.unknown-tool",
                "--",
                &this_exe(),
            ],
            Some("c1-tool-name"),
        );
        if run.status != Some(0) || !run.stdout.contains("unknown-tool") {
            return Err(format!(
                "{format}: status {:?}: {}{}",
                run.status, run.stdout, run.stderr
            ));
        }
        if let Some(c) = run.stdout.chars().find(|c| raw(*c)) {
            return Err(format!("{format}: {c:?} raw in the report: {}", run.stdout));
        }
        // The JSON report's values are unchanged: the name as sent.
        if format == "json" {
            let checked = outcome(&run, "tools.list")?;
            if !checked["evidence"]
                .to_string()
                .contains("\u{9b}2J\u{202e}echo")
            {
                return Err(format!("the name is not in the evidence: {checked}"));
            }
        }
    }
    Ok(())
}

/// review-check-bounds10: a server that answers discovery and its lists,
/// then never again (every server started after the first reads and
/// writes nothing): each check costs its deadline (or the 15 s a server
/// process may take to say its first line), about 72 deadlines in all, 24
/// minutes with the defaults. Once three checks in a row have heard
/// nothing and a new server does not answer its handshake, the rest are
/// not run, and say why.
fn review_a_server_that_stops_answering_does_not_cost_every_checks_deadline() -> Result<(), String>
{
    let marker = std::env::temp_dir().join(format!(
        "mcp-stdio-check-answers-once-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&marker);
    let fault = format!("answers-once:{}", marker.display());
    let began = Instant::now();
    let run = check(
        &[
            "--format",
            "json",
            "--era",
            "modern",
            "--wait",
            "1",
            "--deadline",
            "3",
            "--only",
            "jsonrpc,tools,resources,prompts",
            "--",
            &this_exe(),
        ],
        Some(&fault),
    );
    let _ = std::fs::remove_file(&marker);
    let took = began.elapsed();
    let all = outcomes(&run);
    let not_run = all
        .iter()
        .filter(|o| {
            o["reason"]
                .as_str()
                .is_some_and(|r| r.starts_with("not run: the server stopped answering"))
        })
        .count();
    // The new server's handshake waited the 15 s a process may take to
    // say its first line, and the reason says so (it said the 1 s of
    // `--wait`: note10).
    let says_its_wait = all.iter().any(|o| {
        o["reason"]
            .as_str()
            .is_some_and(|r| r.contains("did not answer its handshake: no answer within 1.0 s"))
    });
    if run.status != Some(1) || not_run == 0 || says_its_wait {
        return Err(format!(
            "status {:?}, {} checks, {not_run} not run, {:.1} s: {}",
            run.status,
            all.len(),
            took.as_secs_f64(),
            failed(&run).join("; ")
        ));
    }
    Ok(())
}

/// One request to the legacy HTTP server above, answered.
fn legacy_http_exchange(stream: std::net::TcpStream) {
    use std::io::BufRead;
    let mut reader = BufReader::new(&stream);
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let length: usize = header("content-length")
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (status, extra, text) = if message["method"] == "initialize" {
        let result = json!({ "protocolVersion": "2025-11-25", "capabilities": {},
            "serverInfo": { "name": "legacy-http", "version": "1" } });
        (
            "200 OK",
            "Mcp-Session-Id: s1\r\nContent-Type: application/json\r\n",
            json!({ "jsonrpc": "2.0", "id": message["id"], "result": result }).to_string(),
        )
    } else if message.get("id").is_none() {
        ("202 Accepted", "", String::new())
    } else if header("mcp-session-id").as_deref() != Some("s1") {
        (
            "400 Bad Request",
            "Content-Type: text/plain\r\n",
            "Bad Request: No valid session ID provided".to_owned(),
        )
    } else if message["method"] == "ping" {
        (
            "200 OK",
            "Content-Type: application/json\r\n",
            json!({ "jsonrpc": "2.0", "id": message["id"], "result": {} }).to_string(),
        )
    } else {
        (
            "200 OK",
            "Content-Type: application/json\r\n",
            json!({ "jsonrpc": "2.0", "id": message["id"],
                "error": { "code": -32601, "message": "Method not found" } })
            .to_string(),
        )
    };
    let _ = (&stream).write_all(
        format!(
            "HTTP/1.1 {status}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{text}",
            text.len()
        )
        .as_bytes(),
    );
}

// ---------------------------------------------------------------------------
// The fault server
// ---------------------------------------------------------------------------

/// What the input and output filters share.
struct Shared {
    fault: String,
    /// Output held back until the next line that is not blank.
    hold: bool,
    held: Vec<Vec<u8>>,
    out: std::io::Stdout,
}

impl Shared {
    fn write_now(&mut self, line: &[u8]) {
        let _ = self.out.write_all(line);
        let _ = self.out.write_all(b"\n");
        let _ = self.out.flush();
    }
}

fn serve_with_fault(fault: &str) -> ! {
    // `stderr-flood+FAULT`: FAULT, and stderr written without pause.
    let fault = match fault.strip_prefix("stderr-flood+") {
        Some(rest) => {
            std::thread::spawn(|| {
                for n in 0u64.. {
                    if writeln!(std::io::stderr(), "log {n}: busy").is_err() {
                        return;
                    }
                    if n % 100 == 0 {
                        // About 100,000 lines a second, no more.
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
            });
            rest
        }
        None => fault,
    };
    let shared = Arc::new(Mutex::new(Shared {
        fault: fault.to_owned(),
        hold: false,
        held: Vec::new(),
        out: std::io::stdout(),
    }));
    if let Some(marker) = fault.strip_prefix("answers-once:") {
        // The first server answers; every one after it, nothing, ever.
        if std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(marker)
            .is_err()
        {
            loop {
                std::thread::park();
            }
        }
    }
    if fault == "slow-start" {
        // Three seconds before it reads or writes anything.
        std::thread::sleep(Duration::from_secs(3));
    }
    if fault == "flood" {
        // Long notifications, as fast as they can be written, and
        // nothing else.
        let line = json!({ "jsonrpc": "2.0", "method": "notifications/message",
            "params": { "level": "info", "data": "x".repeat(1 << 20) } })
        .to_string()
            + "\n";
        let mut out = std::io::stdout().lock();
        while out.write_all(line.as_bytes()).is_ok() {}
        std::process::exit(0);
    }
    if fault == "stdout-log" {
        shared
            .lock()
            .unwrap()
            .write_now(b"Server starting on stdio...");
    }
    // A first line, before anything is read: a log notification with
    // DATA in it, as the fault has it.
    let message = |data: &[u8]| {
        [
            &br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"#[..],
            data,
            b"}}",
        ]
        .concat()
    };
    let first: Option<Vec<u8>> = match fault {
        "number-past-a-double" => Some(message(b"1e400")),
        "bare-number-past-a-double" => Some(b"1e400".to_vec()),
        "array-past-a-double" => Some(b"[1e400]".to_vec()),
        "invalid-utf8-in-a-string" => Some(message(b"\"caf\xe9\"")),
        "lone-surrogate" => Some(message(br#""\ud800""#)),
        "nested-past-128" => Some(message(
            &["[".repeat(200), "]".repeat(200)].concat().into_bytes(),
        )),
        "trailing-garbage" => Some([message(b"1"), b" x".to_vec()].concat()),
        "two-messages-on-a-line" => Some([message(b"1"), message(b"2")].concat()),
        "number-then-log" => {
            Some([message(b"1e400"), b"\nServer starting on stdio...".to_vec()].concat())
        }
        _ => None,
    };
    if let Some(line) = first {
        shared.lock().unwrap().write_now(&line);
    }
    let input = FaultIn {
        shared: Arc::clone(&shared),
        lines: 0,
        partial: Vec::new(),
        ready: Vec::new(),
        at: 0,
    };
    let output = FaultOut {
        shared: Arc::clone(&shared),
        partial: Vec::new(),
    };
    let res = everything::build().serve(Transport::new(BufReader::new(input), output));
    if fault == "no-exit-on-eof" {
        // Served to the end, then lingers: the checker kills it.
        std::thread::sleep(Duration::from_secs(60));
    }
    std::process::exit(i32::from(res.is_err()));
}

/// The server's input: stdin, line by line, through the fault.
struct FaultIn {
    shared: Arc<Mutex<Shared>>,
    /// The lines read so far.
    lines: usize,
    partial: Vec<u8>,
    ready: Vec<u8>,
    at: usize,
}

impl Read for FaultIn {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.ready.len() {
            if let Some(token) = self
                .shared
                .lock()
                .unwrap()
                .fault
                .strip_prefix("stops-reading:")
            {
                // Served its first lines; now reads nothing, ever (its
                // process is found by the token and must be gone).
                if self.lines >= 6 {
                    let _ = token;
                    loop {
                        std::thread::park();
                    }
                }
            }
            let mut chunk = [0u8; 65536];
            let n = std::io::stdin().read(&mut chunk)?;
            if n == 0 {
                if self.partial.is_empty() {
                    return Ok(0);
                }
                self.ready = std::mem::take(&mut self.partial);
                self.at = 0;
                break;
            }
            self.partial.extend_from_slice(&chunk[..n]);
            let mut lines = Vec::new();
            while let Some(at) = self.partial.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.partial.drain(..=at).collect();
                lines.push(line);
                self.lines += 1;
            }
            self.ready.clear();
            self.at = 0;
            let mut shared = self.shared.lock().unwrap();
            let last_blank = lines
                .last()
                .is_some_and(|l| l.iter().all(u8::is_ascii_whitespace));
            for line in lines {
                if let Some(line) = filter_in(&mut shared, line) {
                    self.ready.extend_from_slice(&line);
                }
            }
            if shared.fault == "blank-line-hold" && last_blank {
                shared.hold = true;
            }
        }
        let n = buf.len().min(self.ready.len() - self.at);
        buf[..n].copy_from_slice(&self.ready[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// One line of input through the fault: dropped, changed, or answered
/// before the server sees it.
fn filter_in(shared: &mut Shared, line: Vec<u8>) -> Option<Vec<u8>> {
    let blank = line.iter().all(u8::is_ascii_whitespace);
    if !blank && shared.hold {
        // A line that is not blank releases what was held, then goes on.
        shared.hold = false;
        for held in std::mem::take(&mut shared.held) {
            shared.write_now(&held);
        }
    }
    let parsed: Option<Value> = serde_json::from_slice(&line).ok();
    if let (Some(path), Some(v)) = (shared.fault.strip_prefix("count-calls:"), &parsed)
        && v["method"] == "tools/call"
    {
        // Every tool called, one a line, whichever server process it is.
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        let _ = writeln!(
            file,
            "{} {}",
            v["params"]["name"].as_str().unwrap_or("?"),
            v["params"]["arguments"]
        );
    }
    if let Some(v) = &parsed
        && shared.fault.contains("+modern-lists-nothing+")
        && v["method"] == "tools/list"
        && v.pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
            .is_some()
    {
        // A modern `tools/list`: no tools (the legacy era lists them).
        let empty = json!({ "jsonrpc": "2.0", "id": v["id"],
            "result": { "resultType": "complete", "tools": [] } });
        shared.write_now(empty.to_string().as_bytes());
        return None;
    }
    match (shared.fault.as_str(), &parsed) {
        ("no-parse-error", None) if !blank => None,
        ("reply-after-cancel", Some(v)) if v["method"] == "notifications/cancelled" => None,
        ("answers-notifications", Some(v))
            if v.get("method").is_some() && v.get("id").is_none() =>
        {
            shared.write_now(
                json!({ "jsonrpc": "2.0", "id": null, "result": {} })
                    .to_string()
                    .as_bytes(),
            );
            Some(line)
        }
        ("ack-after-event", Some(v)) if v["method"] == "subscriptions/listen" => {
            let event = json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                "params": { "_meta": { "io.modelcontextprotocol/subscriptionId": v["id"] } } });
            shared.write_now(event.to_string().as_bytes());
            Some(line)
        }
        ("mrtr-undeclared", Some(v)) if v["method"] == "tools/call" => {
            // Every capability, whatever the client declared.
            let mut v = v.clone();
            v["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
                json!({ "elicitation": {}, "sampling": {}, "roots": {} });
            Some(format!("{v}\n").into_bytes())
        }
        ("task-get-undeclared", Some(v)) if v["method"] == "tasks/get" => {
            // The Tasks extension, whatever the client declared.
            let mut v = v.clone();
            v["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"] =
                json!({ "io.modelcontextprotocol/tasks": {} });
            Some(format!("{v}\n").into_bytes())
        }
        ("task-undeclared", Some(v)) if v["method"] == "tools/call" => {
            let mut v = v.clone();
            v["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"] =
                json!({ "io.modelcontextprotocol/tasks": {} });
            Some(format!("{v}\n").into_bytes())
        }
        ("no-listen", Some(v)) if v["method"] == "subscriptions/listen" => {
            // Not implemented: answered as any unknown method is.
            let mut v = v.clone();
            v["method"] = json!("mcp-stdio-check-fault/no-listen");
            Some(format!("{v}\n").into_bytes())
        }
        ("many-pages", Some(v)) if v["method"] == "tools/list" => {
            // 150 tools, one a page.
            let page = v
                .pointer("/params/cursor")
                .and_then(Value::as_str)
                .and_then(|c| c.strip_prefix("page-"))
                .and_then(|n| n.parse::<u32>().ok())
                .unwrap_or(0);
            let mut result = json!({ "resultType": "complete",
                "tools": [{ "name": format!("tool_{page}"), "inputSchema": { "type": "object" } }] });
            if page + 1 < 150 {
                result["nextCursor"] = json!(format!("page-{}", page + 1));
            }
            shared.write_now(
                json!({ "jsonrpc": "2.0", "id": v["id"], "result": result })
                    .to_string()
                    .as_bytes(),
            );
            None
        }
        ("endless-pages", Some(v)) if v["method"] == "tools/list" => {
            // Always a next page: one tool of 4 MiB each (written as it
            // is, not serialized each time: fast enough to show).
            static BIG: std::sync::OnceLock<String> = std::sync::OnceLock::new();
            let big = BIG.get_or_init(|| "x".repeat(4 << 20));
            let page = v
                .pointer("/params/cursor")
                .and_then(Value::as_str)
                .and_then(|c| c.strip_prefix("page-"))
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0);
            let answer = format!(
                r#"{{"jsonrpc":"2.0","id":{},"result":{{"resultType":"complete","nextCursor":"page-{}","tools":[{{"name":"tool_{page}","description":"{big}","inputSchema":{{"type":"object"}}}}]}}}}"#,
                v["id"],
                page + 1
            );
            shared.write_now(answer.as_bytes());
            None
        }
        ("listen-flood", Some(v)) if v["method"] == "subscriptions/listen" => {
            // 300 notifications of 1 MiB on the subscription, then the
            // acknowledgment (the server's own).
            let event = json!({ "jsonrpc": "2.0", "method": "notifications/message",
                "params": { "level": "info", "data": "x".repeat(1 << 20),
                    "_meta": { "io.modelcontextprotocol/subscriptionId": v["id"] } } })
            .to_string();
            for _ in 0..300 {
                shared.write_now(event.as_bytes());
            }
            Some(line)
        }
        ("errors-not-results", Some(v))
            if matches!(
                v["method"].as_str(),
                Some("resources/read" | "prompts/get" | "completion/complete")
            ) =>
        {
            let error = if v["method"] == "completion/complete" {
                json!({ "code": -32602, "message": "Missing required arguments: complete the other argument first" })
            } else {
                json!({ "code": -32603, "message": "Internal error: the backing store is unavailable" })
            };
            shared.write_now(
                json!({ "jsonrpc": "2.0", "id": v["id"], "error": error })
                    .to_string()
                    .as_bytes(),
            );
            None
        }
        ("any-version", Some(v))
            if v.pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
                == Some(&json!("1900-01-01")) =>
        {
            let mut v = v.clone();
            v["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2026-07-28");
            Some(format!("{v}\n").into_bytes())
        }
        _ => Some(line),
    }
}

/// The server's output: whole lines, through the fault, to stdout (or
/// held).
struct FaultOut {
    shared: Arc<Mutex<Shared>>,
    partial: Vec<u8>,
}

impl Write for FaultOut {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.partial.extend_from_slice(buf);
        while let Some(at) = self.partial.iter().position(|b| *b == b'\n') {
            let mut line: Vec<u8> = self.partial.drain(..=at).collect();
            line.pop();
            let mut shared = self.shared.lock().unwrap();
            if shared.fault == "slow-unknown-method"
                && serde_json::from_slice::<Value>(&line)
                    .is_ok_and(|v| v.pointer("/error/code") == Some(&json!(-32601)))
            {
                // Late, and everything after it waits behind it.
                std::thread::sleep(Duration::from_millis(2500));
            }
            let line = filter_out(&shared.fault, line);
            if shared.hold {
                shared.held.push(line);
            } else {
                shared.write_now(&line);
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The JSON text serde_json's `Value` refuses (RFC 8259 lets a reader
/// refuse each) that an `unreadable-*` fault puts in an extra member of
/// an answer.
fn unreadable_value(fault: &str) -> Option<String> {
    Some(match fault.rsplit('+').next()? {
        "past-a-double" => "1e400".to_owned(),
        "lone-surrogate" => r#""\ud800""#.to_owned(),
        "nested-past-128" => ["[".repeat(200), "]".repeat(200)].concat(),
        _ => return None,
    })
}

/// `unreadable-WHAT+VALUE`: the answers WHAT names (`handshake`: the
/// `server/discover` and `initialize` results; `discover`: the
/// `server/discover` result alone; `tools-list`: each
/// `tools/list` result; `errors`: each error) with a member
/// `x-unreadable` whose value is VALUE (`unreadable_value`), in a place
/// no check reads: a valid answer the checker cannot read.
fn unreadable_answer(fault: &str, v: &Value) -> Option<Vec<u8>> {
    let what = fault.strip_prefix("unreadable-")?.split('+').next()?;
    let value = unreadable_value(fault)?;
    let at = match what {
        "handshake" if v.pointer("/result/capabilities").is_some() => "result",
        "discover" if v.pointer("/result/supportedVersions").is_some() => "result",
        "tools-list" if v.pointer("/result/tools").is_some() => "result",
        "prompts-list" if v.pointer("/result/prompts").is_some() => "result",
        "input-required" if v.pointer("/result/inputRequests").is_some() => "result",
        "errors" if v.get("error").is_some() => "error",
        _ => return None,
    };
    let mut v = v.clone();
    v[at]["x-unreadable"] = json!("UNREADABLE");
    Some(v.to_string().replace("\"UNREADABLE\"", &value).into_bytes())
}

/// `tools-list-KIND`: each `tools/list` answer malformed as KIND says
/// (`result-twice`, and beside `1e400`: `result-twice`, `id-twice`,
/// `null-result`).
fn malformed_answer(fault: &str, v: &Value) -> Option<Vec<u8>> {
    // `discover-result-twice`, `initialize-result-twice`: that handshake's
    // answer with `result` twice (review of check14).
    let handshake = match fault {
        "discover-result-twice" => v.pointer("/result/supportedVersions"),
        "initialize-result-twice" => v.pointer("/result/protocolVersion"),
        _ => None,
    };
    if handshake.is_some() {
        let (id, result) = (&v["id"], &v["result"]);
        let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result},"result":{result}}}"#);
        return Some(line.into_bytes());
    }
    let kind = fault.strip_prefix("tools-list-")?;
    v.pointer("/result/tools")?;
    let (id, result) = (&v["id"], &v["result"]);
    let line = match kind {
        "result-twice" => {
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result},"result":{result}}}"#)
        }
        "result-twice+past-a-double" => {
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"x":1e400}},"result":{result}}}"#)
        }
        "id-twice+past-a-double" => {
            format!(r#"{{"jsonrpc":"2.0","id":{id},"id":{id},"result":{result},"x":1e400}}"#)
        }
        "null-result+past-a-double" => {
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":null,"x":1e400}}"#)
        }
        _ => return None,
    };
    Some(line.into_bytes())
}

/// One line of output through the fault.
fn filter_out(fault: &str, line: Vec<u8>) -> Vec<u8> {
    if fault == "bom" {
        // Each line after a byte order mark, as a Windows console may.
        return [&b"\xef\xbb\xbf"[..], &line].concat();
    }
    let Ok(mut v) = serde_json::from_slice::<Value>(&line) else {
        return line;
    };
    if let Some(unreadable) = unreadable_answer(fault, &v) {
        return unreadable;
    }
    if let Some(malformed) = malformed_answer(fault, &v) {
        return malformed;
    }
    if fault == "answers-invalid-utf8" && v.get("result").is_some_and(Value::is_object) {
        // Every result with a string whose bytes are not UTF-8 in it.
        v["result"]["note"] = json!("caf\u{e9}");
        let mut bytes = v.to_string().into_bytes();
        let at = bytes.windows(2).position(|w| w == [0xc3, 0xa9]).unwrap();
        bytes.splice(at..at + 2, [0xe9]);
        return bytes;
    }
    match fault {
        "id-as-string" => {
            // Ids that do not fit 1..2^31 come back as strings.
            if let Some(n) = v
                .get("id")
                .and_then(|id| id.as_i64().map(i128::from).or(id.as_u64().map(i128::from)))
                && !(1..(1 << 31)).contains(&n)
            {
                v["id"] = json!(n.to_string());
            }
        }
        "schema-break" if v.pointer("/result/tools").is_some() => {
            v["result"]["ttlMs"] = json!("soon")
        }
        "no-is-error" if v.pointer("/result/isError").is_some() => {
            v["result"].as_object_mut().unwrap().remove("isError");
        }
        "mrtr-empty" if v.pointer("/result/resultType") == Some(&json!("input_required")) => {
            let result = v["result"].as_object_mut().unwrap();
            result.remove("inputRequests");
            result.remove("requestState");
        }
        "task-unresolved" if v.pointer("/result/resultType") == Some(&json!("task")) => {
            // A task id no tasks/get resolves.
            let id = v["result"]["taskId"].as_str().unwrap_or_default();
            v["result"]["taskId"] = json!(format!("not-yet-{id}"));
        }
        "id-always-string" if v.get("result").is_some() || v.get("error").is_some() => {
            let Some(n) = v.get("id").and_then(Value::as_i64) else {
                return line;
            };
            v["id"] = json!(n.to_string());
        }
        "no-listen" if v.pointer("/error/code") == Some(&json!(-32601)) => {
            v["error"]["code"] = json!(-32602);
        }
        "no-listen"
            if v.pointer("/result/capabilities")
                .is_some_and(Value::is_object) =>
        {
            // Nothing to listen to.
            for cap in v["result"]["capabilities"]
                .as_object_mut()
                .unwrap()
                .values_mut()
            {
                if let Some(cap) = cap.as_object_mut() {
                    cap.remove("listChanged");
                    cap.remove("subscribe");
                }
            }
        }
        "schema-bomb" if v.pointer("/result/tools/0").is_some() => {
            // Every tool's schema refers to itself in two branches.
            for tool in v["result"]["tools"].as_array_mut().unwrap() {
                tool["inputSchema"] = json!({
                    "type": "object",
                    "properties": { "a": { "type": "string" } },
                    "required": ["a"],
                    "oneOf": [{ "$ref": "#" }, { "$ref": "#" }]
                });
            }
        }
        "evil-tool-name" if v.pointer("/result/tools/0").is_some() => {
            v["result"]["tools"][0]["name"] = json!("\u{1b}]0;pwned\u{7}echo");
        }
        "c1-tool-name" if v.pointer("/error/code").is_some() => {
            // A tool result instead of an error, its text the same.
            let text = "\u{9b}2J\u{202e}no such tool";
            v = json!({ "jsonrpc": "2.0", "id": v["id"],
                "result": { "content": [{ "type": "text", "text": text }], "isError": true } });
        }
        "c1-tool-name" if v.pointer("/result/tools/0").is_some() => {
            v["result"]["tools"][0]["name"] = json!("\u{9b}2J\u{202e}echo");
        }
        "huge-tools-list" if v.pointer("/result/tools/0").is_some() => {
            // One valid line of 5 MiB.
            v["result"]["tools"][0]["description"] = json!("x".repeat(5 << 20));
        }
        "result-type-unknown" if v.pointer("/result/resultType") == Some(&json!("complete")) => {
            v["result"]["resultType"] = json!("done");
        }
        "unknown-method-unreadable-result" if v.pointer("/error/code") == Some(&json!(-32601)) => {
            // A result, not the error due, holding what `Value` refuses.
            return format!(
                r#"{{"jsonrpc":"2.0","id":{},"result":{{"resultType":"complete","x":1e400}}}}"#,
                v["id"]
            )
            .into_bytes();
        }
        "empty-results-unreadable-errors" if v.get("result") == Some(&json!({})) => {
            // An error where an empty result is due (ping's), holding what
            // `Value` refuses.
            return format!(
                r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":-32603,"message":"busy","data":1e400}}}}"#,
                v["id"]
            )
            .into_bytes();
        }
        "unknown-method-array" if v.pointer("/error/code") == Some(&json!(-32601)) => {
            // Not a message: an array with the id and the error in it.
            return format!(
                r#"[{},null,{{"code":-32601,"message":"Method not found","data":1e400}}]"#,
                v["id"]
            )
            .into_bytes();
        }
        "unknown-method-result" if v.pointer("/error/code") == Some(&json!(-32601)) => {
            v = json!({ "jsonrpc": "2.0", "id": v["id"], "result": { "resultType": "complete" } });
        }
        _ => return line,
    }
    v.to_string().into_bytes()
}

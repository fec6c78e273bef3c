//! What a report holds: a JUnit case per check, the lines sent and
//! received as evidence whatever the server writes to stderr, and no
//! control character of the server's that could drive a terminal.

use crate::Tests;
use crate::support::{check, outcome, this_exe};

pub const TESTS: Tests = named![
    junit_report_has_a_case_per_check,
    review_a_stderr_flood_leaves_the_lines_sent_and_received_in_the_evidence,
    review_c1_and_bidi_controls_in_json_and_junit_reports_are_escaped,
    review_tool_names_in_a_call_refusal_cannot_drive_the_terminal,
];

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

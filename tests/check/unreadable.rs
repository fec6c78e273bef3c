//! Lines the checker cannot read (a number past a double's range, a lone
//! surrogate, nesting past 128, a line past its length limit): the
//! checker's limit, a skip that names the reader's own reason, never a
//! violation and never "no answer"; the era whose handshake was read is
//! the one checked.

use serde_json::Value;

use crate::Tests;
use crate::support::{ASKS, check, failed, outcome, outcomes, this_exe};

pub const TESTS: Tests = named![
    review_a_line_longer_than_the_checkers_limit_is_not_a_violation,
    a_number_past_a_double_is_json_the_checker_cannot_read_not_a_violation,
    review_an_unreadable_line_says_the_readers_own_reason,
    review_an_unreadable_handshake_answer_is_an_answer_not_unreachable,
    review_an_unreadable_list_answer_is_a_skip_not_no_answer,
    review_an_unreadable_error_is_a_skip_not_no_answer,
    review_a_prompt_list_the_checker_cannot_read_is_not_said_to_be_empty,
    review_a_call_answered_unreadably_is_not_said_to_be_unanswered,
    an_unreadable_discover_beside_a_readable_initialize_is_checked_in_the_legacy_era,
    review_the_lists_of_a_legacy_checked_server_are_its_legacy_lists,
];

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

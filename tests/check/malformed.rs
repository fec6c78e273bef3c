//! Answers that are not what they should be, even where the checker cannot
//! read them all: a result where an error is due (or the reverse), a
//! line that is no object, an array holding an id, a member twice: each
//! fails the check that meets it, naming the defect.

use crate::Tests;
use crate::support::{check, outcome, outcomes, this_exe};

pub const TESTS: Tests = named![
    review_an_unreadable_result_where_an_error_is_due_fails,
    review_an_unreadable_error_where_a_result_is_due_fails,
    review_a_line_the_checker_cannot_read_that_is_no_object_is_a_violation,
    review_an_array_holding_an_id_is_not_an_answer,
    a_malformed_answer_is_named_not_taken_for_silence,
    review_a_malformed_handshake_answer_beside_a_good_one_fails_a_check,
];

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

//! A check's verdict on a server that keeps its rule in a way the check
//! did not expect (nothing to listen to, many pages, an error the spec
//! names), or breaks it where the check did not look (a result type
//! outside the protocol's, a log line before the legacy handshake).

use crate::Tests;
use crate::support::{check, failed, outcome, outcomes, this_exe};

pub const TESTS: Tests = named![
    review_a_server_with_nothing_to_listen_to_is_skipped_not_failed,
    review_a_list_of_more_than_100_pages_is_not_a_violation,
    review_an_error_the_spec_allows_is_not_a_schema_violation,
    review_a_result_type_outside_the_protocols_set_fails,
    review_a_log_line_before_the_legacy_handshake_fails_stdout_only_mcp,
];

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

//! How a run ends, and its exit status: a server that cannot start, is
//! slow to start, stops reading, floods its output or stops answering
//! costs each wait its time, not the run; a server reached that breaks a
//! MUST is status 1, not 2 ("could not be reached"); a late answer is
//! never a later check's.

use std::time::{Duration, Instant};

use crate::Tests;
use crate::support::{FAULT_ENV, check, failed, outcome, outcomes, this_exe};

pub const TESTS: Tests = named![
    a_server_that_stops_reading_costs_each_check_its_deadline,
    a_server_that_floods_its_output_costs_each_wait_its_time,
    a_server_slow_to_start_is_waited_for,
    a_server_that_cannot_start_is_status_2,
    review_a_late_answer_is_not_taken_for_a_later_checks,
    review_a_server_answering_every_request_with_another_id_is_status_1,
    review_a_server_that_answers_after_a_bom_is_reached_and_fails,
    review_answers_that_are_not_utf8_fail_the_handshake_not_unreachable,
    review_a_miss_after_the_server_spoke_says_the_time_it_waited,
    review_a_server_that_stops_answering_does_not_cost_every_checks_deadline,
];

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

//! `mcp-stdio check` against a server with one switch per fault: each
//! switch flips one rule of the spec, and the checker must fail exactly
//! the checks that rule is for, and nothing else; with no switch, nothing
//! fails (`faults.rs`). Then the catalogue: every quote is found in the
//! spec (`tests/spec/`), the embedded schemas are the spec's,
//! `CONFORMANCE.md` is what `--list --format markdown` prints
//! (`catalogue.rs`); and the exit statuses and report formats. One file
//! per topic, each with its tests in `TESTS`; `support.rs` runs the
//! checker and reads its reports.
//!
//! With `MCP_STDIO_CHECK_FAULT` set, `main` becomes the server: the
//! everything example (its modules compiled in, as `tests/cli.rs` does),
//! its input and output passed through a filter that breaks one rule
//! (`fault_server.rs`, `fault_output.rs`). `mcp-stdio check` passes its
//! environment to the server it starts.
//!
//! Output: `ok <name>` or `FAILED <name>: <reason>` per test, then
//! `N passed, M failed`. Every run of the checker is bounded (killed
//! after `support::LIMIT`).

/// The functions named, each a test by its own name.
macro_rules! named {
    ($($test:ident),* $(,)?) => {
        &[$((stringify!($test), $test as fn() -> Result<(), String>)),*]
    };
}

#[path = "../../examples/everything/conformance.rs"]
mod conformance;
#[path = "../../examples/everything/server.rs"]
mod everything;
#[path = "../../examples/everything/fixtures.rs"]
mod fixtures;
#[path = "../harness/selection.rs"]
mod selection;

mod support;

mod bounds;
mod calls;
mod catalogue;
mod fault_output;
mod fault_server;
mod faults;
mod http;
mod http_answers;
mod malformed;
mod reports;
mod runs;
mod unreadable;
mod verdicts;

use std::sync::Mutex;
use std::time::Instant;

use selection::Selection;
use support::FAULT_ENV;

/// One test: `Err` says what went wrong.
type Test = Box<dyn Fn() -> Result<(), String> + Send + Sync>;

/// A topic's tests (`named!`): each a plain function, with its name.
type Tests = &'static [(&'static str, fn() -> Result<(), String>)];

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
        fault_server::serve_with_fault(&fault);
    }
    let sel = Selection::from_args(std::env::args().skip(1));
    let mut tests = faults::tests();
    for module in [
        catalogue::TESTS,
        runs::TESTS,
        reports::TESTS,
        calls::TESTS,
        verdicts::TESTS,
        unreadable::TESTS,
        malformed::TESTS,
        bounds::TESTS,
        http::TESTS,
        http_answers::TESTS,
    ] {
        for &(name, test) in module {
            tests.push((name.into(), Box::new(test)));
        }
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

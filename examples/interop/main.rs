//! This crate's client against any fixture server of
//! `tests/interop/CHECKS.md`: runs the named interop checks and prints one
//! JSON line per check (`{"check", "status", "detail"}`), as
//! `tests/interop/run.sh` expects of every check driver. The exit status is
//! non-zero when a check failed.
//!
//! ```text
//! cargo run --example interop -- cargo run -q --example everything
//! cargo run --example interop -- --legacy cargo run -q --example everything
//! cargo run --example interop -- target/interop/py/bin/python tests/interop/python/server.py
//! ```
//!
//! `--legacy` makes the client speak only the `initialize` era; by default
//! it probes `server/discover` and falls back to `initialize`.

mod checks;

use std::process::{Command, ExitCode};

use mcp_stdio::EraPolicy;
use serde_json::json;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1).peekable();
    let mut era = EraPolicy::Auto;
    while let Some(flag) = args.next_if(|a| a.starts_with("--")) {
        match flag.as_str() {
            "--legacy" => era = EraPolicy::LegacyOnly,
            "--" => break,
            other => {
                eprintln!("interop: unknown flag {other}");
                return ExitCode::from(2);
            }
        }
    }
    let Some(program) = args.next() else {
        eprintln!("usage: interop [--legacy] [--] <server command> [args...]");
        return ExitCode::from(2);
    };
    let mut command = Command::new(program);
    command.args(args);

    let mut failed = false;
    for (check, verdict) in checks::run(command, era) {
        let (status, detail) = verdict.parts();
        failed |= status == "fail";
        println!(
            "{}",
            json!({ "check": check, "status": status, "detail": detail })
        );
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

//! Load generator for any stdio MCP server: spawns the server command and
//! measures `tools/call echo` (modern per-request `_meta`) on it.
//!
//! ```text
//! loadgen [OPTIONS] PROGRAM [ARGS...]
//! loadgen [OPTIONS] --compare PROGRAM [ARGS...] -- PROGRAM [ARGS...] [-- ...]
//!
//! --compare     measure two or more servers, interleaved round by round
//!               (A B A B ...), and print each one's medians and its ratio to A
//! --rounds N    rounds (default 1, or 5 with --compare); figures are medians
//! --pin CPU     run every server under `taskset -c CPU` and pin the load
//!               generator itself to the same CPU (`taskset -a -p`), so that
//!               sequential latency does not depend on cross-core wake-ups
//! --sizes LIST  payload sizes, comma-separated bytes with optional k or m
//!               suffix (default 32,1k,64k,1m)
//! --quick       tiny counts: checks that everything works, figures mean nothing
//! --json        one JSON object per line and figure instead of the table:
//!               {"server","figure","payload_bytes","unit","value","rounds","ratio"}
//! ```
//!
//! Options come first; everything after them is the server command (after
//! `--compare`, the commands are separated by `--`). For example:
//!
//! ```text
//! cargo build --release --example echo
//! cargo build --profile floor --example floor --example loadgen
//! target/floor/examples/loadgen --pin 1 --compare target/floor/examples/floor -- target/release/examples/echo
//! ```
//!
//! What is measured, per server and round (each phase on fresh processes;
//! see `measure.rs`):
//!
//! - startup, spawn → the reply to `server/discover`, median of 20 processes;
//!   the peak RSS (`VmHWM`) right after it; the exit time after stdin EOF;
//! - at each payload size, on one process: sequential round trips (p50, p90,
//!   p99 over 5,000 calls after 1,000 warm-up calls), pipelined throughput
//!   (100,000 calls, 64 in flight), the server's CPU time over them
//!   (`utime + stime`) per 1,000 calls and its peak RSS after them, and a
//!   burst of calls written just before stdin is closed, all of which must
//!   be answered. At large payloads the counts are capped by bytes moved
//!   (128 MiB sequential, 512 MiB pipelined, at least 64 calls): the table
//!   header says how many calls each size got.
//!
//! Every reply is checked: its id, and its text byte for byte (each call's
//! text is unique). A wrong, duplicate or missing reply, or a server that
//! does not exit cleanly on EOF, is an error: the exit status is 1.

mod measure;
mod process;
mod procfs;
mod report;
mod wire;

use std::io::Write;
use std::process::{Command, ExitCode, Stdio};

use measure::{Measurement, Plan};
use process::ServerCommand;
use wire::Payload;

/// The command line, parsed.
#[derive(Debug)]
struct Options {
    json: bool,
    rounds: usize,
    pin: Option<usize>,
    plan: Plan,
    commands: Vec<ServerCommand>,
}

fn main() -> ExitCode {
    let options = match parse(std::env::args().skip(1).collect()) {
        Ok(Some(options)) => options,
        Ok(None) => {
            print!("{}", usage());
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("loadgen: {e}\n\n{}", usage());
            return ExitCode::from(2);
        }
    };
    match run(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("loadgen: {e}");
            ExitCode::FAILURE
        }
    }
}

fn usage() -> &'static str {
    "usage: loadgen [--json] [--rounds N] [--pin CPU] [--sizes 32,1k,64k,1m] [--quick] PROGRAM [ARGS...]\n       \
     loadgen [OPTIONS] --compare PROGRAM [ARGS...] -- PROGRAM [ARGS...] [-- ...]\n"
}

/// `Ok(None)` for `--help`.
fn parse(args: Vec<String>) -> Result<Option<Options>, String> {
    let mut args = args.into_iter().peekable();
    let (mut json, mut compare, mut quick) = (false, false, false);
    let (mut rounds, mut pin, mut sizes) = (None, None, None);
    while let Some(arg) = args.next_if(|a| a.starts_with("--") || a == "-h") {
        let mut value = |what: &str| args.next().ok_or(format!("{arg} needs {what}"));
        match arg.as_str() {
            "--json" => json = true,
            "--compare" => compare = true,
            "--quick" => quick = true,
            "--rounds" => rounds = Some(number(&value("a number")?)?),
            "--pin" => pin = Some(number(&value("a CPU number")?)?),
            "--sizes" => sizes = Some(parse_sizes(&value("a list of sizes")?)?),
            "--help" | "-h" => return Ok(None),
            "--" => break,
            other => return Err(format!("unknown option {other}")),
        }
    }
    let rest: Vec<String> = args.collect();
    let groups: Vec<&[String]> = if compare {
        rest.split(|a| a == "--").collect()
    } else {
        vec![&rest[..]]
    };
    if groups.iter().any(|g| g.is_empty()) || (compare && groups.len() < 2) {
        return Err(if compare {
            "--compare needs two or more server commands separated by --".to_owned()
        } else {
            "no server command".to_owned()
        });
    }
    let commands = groups
        .iter()
        .map(|g| ServerCommand {
            pin,
            ..ServerCommand::new(g[0].clone(), g[1..].iter().cloned())
        })
        .collect();
    let mut plan = if quick { Plan::quick() } else { Plan::full() };
    if let Some(sizes) = sizes {
        plan.sizes = sizes;
    }
    Ok(Some(Options {
        json,
        rounds: rounds.unwrap_or(if compare { 5 } else { 1 }).max(1),
        pin,
        plan,
        commands,
    }))
}

fn number(s: &str) -> Result<usize, String> {
    s.parse().map_err(|_| format!("not a number: {s}"))
}

/// `32,1k,64k,1m` → bytes.
fn parse_sizes(list: &str) -> Result<Vec<usize>, String> {
    list.split(',')
        .map(|item| {
            let item = item.trim().to_ascii_lowercase();
            let (digits, unit) = match item.strip_suffix('k') {
                Some(d) => (d.to_owned(), 1 << 10),
                None => match item.strip_suffix('m') {
                    Some(d) => (d.to_owned(), 1 << 20),
                    None => (item.clone(), 1),
                },
            };
            let size = number(&digits)? * unit;
            if size < Payload::MIN_SIZE {
                return Err(format!(
                    "payload {item} is below {} bytes",
                    Payload::MIN_SIZE
                ));
            }
            Ok(size)
        })
        .collect()
}

fn run(options: &Options) -> Result<(), String> {
    if let Some(cpu) = options.pin {
        pin_self(cpu)?;
    }
    let commands = &options.commands;
    let mut runs: Vec<Vec<Measurement>> = vec![Vec::new(); commands.len()];
    for round in 1..=options.rounds {
        for (i, command) in commands.iter().enumerate() {
            eprintln!(
                "loadgen: round {round}/{}: {} = {}",
                options.rounds,
                report::letter(i),
                command.label()
            );
            let measurement = measure::measure(command, &options.plan)
                .map_err(|e| format!("{}: {e}", command.label()))?;
            if measurement.replies_checked != options.plan.replies() {
                return Err(format!(
                    "{}: {} replies checked, {} expected",
                    command.label(),
                    measurement.replies_checked,
                    options.plan.replies()
                ));
            }
            runs[i].push(measurement);
        }
    }
    let labels: Vec<String> = commands.iter().map(ServerCommand::label).collect();
    let rows = report::summarize(&runs);
    let mut out = std::io::stdout().lock();
    let written = if options.json {
        report::write_json(&mut out, &labels, &rows)
    } else {
        write_header(&mut out, options).and_then(|()| report::write_table(&mut out, &labels, &rows))
    };
    written
        .and_then(|()| out.flush())
        .map_err(|e| format!("stdout: {e}"))
}

/// What the table is about: rounds, pinning, calls per size.
fn write_header(out: &mut impl Write, options: &Options) -> std::io::Result<()> {
    let plan = &options.plan;
    let pinned = match options.pin {
        Some(cpu) => format!("servers and load generator pinned to CPU {cpu}"),
        None => "not pinned".to_owned(),
    };
    let interleaved = if options.commands.len() > 1 {
        ", interleaved"
    } else {
        ""
    };
    writeln!(
        out,
        "{} round(s){interleaved}, medians; {pinned}; startup over {} processes",
        options.rounds, plan.startups
    )?;
    for &size in &plan.sizes {
        let c = plan.counts(size);
        writeln!(
            out,
            "{:>7}: {} warm-up + {} sequential calls, {} pipelined (window {}), {} in flight at EOF",
            report::size_label(size),
            c.warmup,
            c.sequential,
            c.pipelined,
            plan.window,
            c.at_eof
        )?;
    }
    Ok(())
}

/// Pins every thread of this process (there is only one yet) to `cpu`;
/// threads started later inherit it.
fn pin_self(cpu: usize) -> Result<(), String> {
    let status = Command::new("taskset")
        .args([
            "-a",
            "-p",
            "-c",
            &cpu.to_string(),
            &std::process::id().to_string(),
        ])
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("taskset: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "taskset could not pin the load generator to CPU {cpu}"
        ))
    }
}

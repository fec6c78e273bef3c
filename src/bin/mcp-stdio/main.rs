//! `mcp-stdio`, the command line: inspect, call, read, prompt and listen to
//! any stdio MCP server, modern (2026-07-28) or legacy (`initialize`), from
//! the shell.
//!
//! ```text
//! mcp-stdio tools -- python -m my_server
//! mcp-stdio call echo text=hi --wire -- cargo run -q --example everything
//! mcp-stdio listen --resource mem://counter --config mcp.json --server everything
//! ```
//!
//! One module per job: `args` (the command line), `config` (`mcpServers`
//! files), `connect` (the server, and the client set up to reach it),
//! `commands` (what each command does with the client), `values`
//! (`key=value` typed by the tool's schema), `output` (what people read on
//! stdout), `save` (`--save DIR`), `escape` (the server's control
//! characters, shown escaped on a terminal), `serve_http` (the server over HTTP, through `mcp_stdio::proxy`), `stderr` (progress, logs, the wire, every
//! other line on stderr), `ask` (input for the server: forms, roots,
//! sampling), `form` (a form asked field by field, each `field` read from its schema), `interrupt` (Ctrl-C for `listen`), `suggest` (did you mean),
//! `check` (`mcp-stdio check`, the conformance checker, with a command line
//! of its own).
//! This file connects them: the client's settings, errors, exit statuses.

mod args;
mod ask;
mod check;
mod commands;
mod config;
mod connect;
mod escape;
mod field;
mod form;
mod interrupt;
#[cfg(feature = "http")]
mod login;
#[cfg(all(feature = "server", feature = "http"))]
mod oauth;
mod output;
mod save;
mod serve_http;
mod stderr;
mod suggest;
// The library's own, so that the command line shows a URL as it does.
#[path = "../../url_for_people.rs"]
mod url_for_people;
mod values;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use mcp_stdio::{Error, ErrorObject, error_code};

use crate::args::{Command, Options};
use crate::ask::Asker;
use crate::connect::start;
use crate::stderr::Stderr;

/// Exit statuses (`--help` lists them).
pub mod status {
    /// The server reported a failure: a tool result with `isError`, or a
    /// JSON-RPC error answering the command's request.
    pub const SERVER_FAILURE: u8 = 1;
    /// The command line was wrong, or lacked an answer the server needs.
    pub const USAGE: u8 = 2;
    /// The server could not be started or spoken to: not found, exited,
    /// broke the protocol, no answer in time.
    pub const CONNECTION: u8 = 3;
    /// Ctrl-C or SIGTERM ended `listen`.
    pub const INTERRUPTED: u8 = 130;
}

/// How a command failed: one line for stderr, and the exit status.
#[derive(Debug)]
pub struct Failure {
    pub status: u8,
    pub message: String,
    /// The server's output ended under the command: the client's note on
    /// how it died (its exit status, its last stderr lines) completes the
    /// line.
    pub server_gone: bool,
    /// The server's error, when that is what failed (`--json` shows it as
    /// the server sent it).
    pub rpc: Option<ErrorObject>,
}

impl Failure {
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure {
            status: status::USAGE,
            message: message.into(),
            server_gone: false,
            rpc: None,
        }
    }

    pub fn connection(message: impl Into<String>) -> Failure {
        Failure {
            status: status::CONNECTION,
            message: message.into(),
            server_gone: false,
            rpc: None,
        }
    }

    /// A client error while doing `what` (`tools/call`, ...).
    pub fn from_client(e: Error, what: &str, opts: &Options, asker: &Asker) -> Failure {
        // Input the command line could not give: say which flag gives it.
        if let Some(message) = asker.refused() {
            return Failure::usage(message);
        }
        match e {
            Error::Rpc(e) if e.code == error_code::MISSING_REQUIRED_CLIENT_CAPABILITY => {
                let needs = e
                    .data
                    .as_ref()
                    .and_then(|d| d.get("requiredCapabilities"))
                    .and_then(|c| c.as_object())
                    .map(|c| c.keys().cloned().collect::<Vec<_>>())
                    .unwrap_or_default();
                let flags: Vec<&str> = needs
                    .iter()
                    .filter_map(|c| match c.as_str() {
                        "sampling" => {
                            Some("--sampling-reply TEXT (sampling is declined unless it is given)")
                        }
                        "roots" => Some("--roots DIR"),
                        _ => None,
                    })
                    .collect();
                let tasks = e
                    .data
                    .as_ref()
                    .and_then(|d| d.pointer("/requiredCapabilities/extensions"))
                    .and_then(|x| x.get(mcp_stdio::types::TASKS_EXTENSION))
                    .is_some();
                if tasks {
                    // Nothing to pass: say what the tool needs and why it
                    // cannot have it here.
                    Failure {
                        status: status::SERVER_FAILURE,
                        message: format!(
                            "{what} needs the Tasks extension ({}), which mcp-stdio does not declare: it runs tools that answer within the call",
                            mcp_stdio::types::TASKS_EXTENSION
                        ),
                        server_gone: false,
                        rpc: Some(e),
                    }
                } else if flags.is_empty() {
                    Failure {
                        status: status::SERVER_FAILURE,
                        message: format!(
                            "the server answered {what} with an error: {} ({})",
                            one_line(&e.message),
                            e.code
                        ),
                        server_gone: false,
                        rpc: Some(e),
                    }
                } else {
                    Failure::usage(format!(
                        "{what} needs the client capability {}: pass {}",
                        needs.join(", "),
                        flags.join(", ")
                    ))
                }
            }
            // Not the server's error: the transport failed before it
            // answered (a connection refused or broken).
            Error::Rpc(e) if Error::Rpc(e.clone()).is_transport_failure() => {
                Failure::connection(format!("{what}: {}", e.message))
            }
            Error::Rpc(e) => Failure {
                status: status::SERVER_FAILURE,
                message: format!(
                    "the server answered {what} with an error: {} ({})",
                    one_line(&e.message),
                    e.code
                ),
                server_gone: false,
                rpc: Some(e),
            },
            Error::Timeout => Failure::connection(format!(
                "no answer to {what} within {}: cancelled (the server was sent notifications/cancelled)",
                opts.timeout.map_or_else(
                    || "the timeout".to_owned(),
                    |t| format!("{} s", t.as_secs_f64())
                )
            )),
            Error::Disconnected => Failure {
                server_gone: true,
                ..Failure::connection(format!("the server closed the connection during {what}"))
            },
            e @ Error::ServerExited { .. } => Failure::connection(e.to_string()),
            e => Failure::connection(format!("{what}: {e}")),
        }
    }
}

fn main() -> ExitCode {
    let args: Result<Vec<String>, _> = std::env::args_os()
        .skip(1)
        .map(|a| a.into_string())
        .collect();
    // `check` has a command line of its own (check/args.rs).
    if let Ok(args) = &args
        && args.first().map(String::as_str) == Some("check")
    {
        return ExitCode::from(check::main(args[1..].to_vec()));
    }
    let parsed = match args {
        Ok(args) => args::parse(args).map_err(|e| e.0),
        Err(arg) => Err(format!("an argument is not UTF-8: {arg:?}")),
    };
    let opts = match parsed {
        Ok(opts) => opts,
        Err(message) => {
            // `--json` was asked for, though the line could not be read.
            let json = std::env::args_os()
                .skip(1)
                .take_while(|a| a != "--")
                .any(|a| a == "--json");
            let message = one_line(&message);
            if json {
                let line = serde_json::json!({ "error": message, "status": status::USAGE });
                eprintln!("{line}");
            } else {
                eprintln!("mcp-stdio: {message}");
            }
            return ExitCode::from(status::USAGE);
        }
    };
    match opts.command {
        Command::Help => {
            output::print(args::HELP);
            return ExitCode::SUCCESS;
        }
        Command::Version => {
            output::print(&format!("mcp-stdio {}", env!("CARGO_PKG_VERSION")));
            return ExitCode::SUCCESS;
        }
        _ => {}
    }
    // On a terminal the server's control characters are shown escaped,
    // unless `--raw` asked for stdout's bytes (`escape`).
    escape::set_stdout(escape::Mode::of(
        std::io::stdout().is_terminal(),
        opts.json,
        opts.raw,
    ));
    let stderr = Arc::new(Stderr::new(
        opts.wire,
        escape::Mode::of(std::io::stderr().is_terminal(), opts.json, false),
        opts.json,
    ));
    ExitCode::from(run(&opts, &stderr))
}

/// `logout`: the tokens kept for the `--url` server forgotten (their
/// file removed); nothing is sent to the server.
#[cfg(feature = "http")]
fn logout(opts: &Options) -> Result<u8, Failure> {
    let Some(args::ServerSpec::Url(url)) = &opts.server else {
        return Err(Failure::usage("logout needs --url".to_owned()));
    };
    let file = login::token_file(url).ok_or_else(|| {
        Failure::usage("no config directory: set HOME or XDG_CONFIG_HOME".to_owned())
    })?;
    match std::fs::remove_file(&file) {
        Ok(()) => {
            output::print(&format!(
                "logged out of {} (removed {})",
                url_for_people::url_for_people(url),
                file.display()
            ));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            output::print(&format!(
                "no tokens were kept for {}",
                url_for_people::url_for_people(url)
            ));
        }
        Err(e) => {
            return Err(Failure::connection(format!(
                "could not remove {}: {e}",
                file.display()
            )));
        }
    }
    Ok(0)
}

/// Without the HTTP client there are no tokens to forget.
#[cfg(not(feature = "http"))]
fn logout(_opts: &Options) -> Result<u8, Failure> {
    Err(Failure::usage(
        "logout: this mcp-stdio was built without the `http` feature".to_owned(),
    ))
}

/// Starts the server, runs the command, says how it failed if it did,
/// closes the server; the exit status.
///
/// Each failure is one line, `mcp-stdio: <what failed and why>`: text the
/// server sent over several lines (an error message, a traceback) is
/// joined with ` | `, and a server that died adds its exit status and its
/// last stderr lines to that line, as a response under an id the client
/// never sent adds the client's note on it. The client's notes show under
/// `--wire` only.
fn run(opts: &Options, stderr: &Arc<Stderr>) -> u8 {
    let fail = |failure: Failure| {
        stderr.error(
            &one_line(&failure.message),
            failure.status,
            failure.rpc.as_ref(),
        );
        failure.status
    };
    // Unbounded: the client's notes are rate-limited, and a run is short.
    if let Command::ServeHttp(serve) = &opts.command {
        return serve_http::run(opts, serve, stderr).unwrap_or_else(fail);
    }
    if let Command::Logout = &opts.command {
        return logout(opts).unwrap_or_else(fail);
    }
    // `--timeout` bounds the whole command, from here.
    let deadline = opts.timeout.map(|t| Instant::now() + t);
    let (note_tx, notes) = crossbeam_channel::unbounded();
    let (client, signals, asker) = match start(opts, stderr, note_tx, &notes) {
        Ok(started) => started,
        Err(failure) => return fail(failure),
    };
    let res = commands::run(&commands::Ctx {
        client: &client,
        opts,
        stderr,
        asker: &asker,
        signals,
        deadline,
    });
    stderr.clear();
    // An `--answer` no form used was a mistake, though the command went
    // through (a mistyped optional field is left out without a word).
    let res = res.and_then(|status| match asker.unused_answers() {
        Some(unused) if status == 0 => Err(Failure::usage(unused)),
        _ => Ok(status),
    });
    let status = res.unwrap_or_else(|mut failure| {
        let death = failure.server_gone.then(|| death_note(&notes, deadline));
        if let Some(death) = death.flatten() {
            failure.message = format!("{}: {death}", failure.message);
        }
        // A request that timed out may have been answered under the wrong
        // id: say so, or the timeout stays a mystery.
        let mut skipped = notes.try_iter().filter(|n| n.starts_with(SKIPPED_RESPONSE));
        if let Some(skipped) = skipped.next() {
            failure.message = format!("{}; {skipped}", failure.message);
        }
        fail(failure)
    });
    // The command's outcome is decided; how the server exits adds nothing
    // to it (the client notes a server that had to be killed), except for
    // a person watching the wire. `--timeout` bounds the close too: a
    // server that stays after its input ends (or ignores SIGTERM) is given
    // what is left of it, not the close grace twice over; but always a
    // moment to exit on its own once its input is closed.
    let closed = match deadline {
        Some(deadline) => {
            let left = deadline.saturating_duration_since(Instant::now());
            client.close_within(left.max(MIN_CLOSE))
        }
        None => client.close(),
    };
    if opts.wire {
        match closed {
            Ok(Some(status)) => {
                stderr.client_note(&format!("closed the server's input; it exited ({status})"));
            }
            Ok(None) => {}
            Err(e) => stderr.client_note(&format!("closing the server: {e}")),
        }
    }
    status
}

/// The least a close under `--timeout` is given, past the deadline if need
/// be: a quarter of a second for each of its three waits (`close_within`).
const MIN_CLOSE: std::time::Duration = std::time::Duration::from_millis(750);

/// How the client's note on a response to no request of its begins.
const SKIPPED_RESPONSE: &str = "skipped a response with id";

/// The client's note on a server whose output ended: how it exited and
/// its last stderr lines. The client makes it after a moment's wait for
/// the exit, so this waits for it, briefly (and not past `--timeout`).
fn death_note(
    notes: &crossbeam_channel::Receiver<String>,
    timeout: Option<Instant>,
) -> Option<String> {
    let now = Instant::now();
    let brief = now + std::time::Duration::from_secs(2);
    // A moment even past `--timeout`: the note may be on its way.
    let deadline = timeout.map_or(brief, |t| t.max(now + MIN_CLOSE / 3).min(brief));
    while let Ok(note) = notes.recv_deadline(deadline) {
        if note.starts_with("the server exited") || note.starts_with("the server closed its output")
        {
            return Some(note);
        }
    }
    None
}

/// `text` on one line: its lines trimmed, blank ones dropped, the rest
/// joined with ` | ` (as the server's last stderr lines are), and every
/// control character left escaped (`escape`): an error line is text, on a
/// terminal or in a log file read on one later.
fn one_line(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    escape::line(&lines.join(" | ")).into_owned()
}

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
//! files), `commands` (what each command does with the client), `output`
//! (what people read on stdout), `serve_http` (the server over HTTP, through `mcp_stdio::proxy`), `stderr` (progress, logs, the wire, every
//! other line on stderr), `ask` (input for the server: forms, roots,
//! sampling), `form` (a form asked field by field, each `field` read from its schema), `interrupt` (Ctrl-C for `listen`), `suggest` (did you mean).
//! This file connects them: the client's settings, errors, exit statuses.

mod args;
mod ask;
mod check;
mod commands;
mod config;
mod field;
mod form;
mod interrupt;
mod output;
mod serve_http;
mod stderr;
mod suggest;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use mcp_stdio::{Client, Error, WireDirection, error_code};

use crate::args::{Command, Options, ServerSpec};
use crate::ask::Asker;
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
}

impl Failure {
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure {
            status: status::USAGE,
            message: message.into(),
            server_gone: false,
        }
    }

    pub fn connection(message: impl Into<String>) -> Failure {
        Failure {
            status: status::CONNECTION,
            message: message.into(),
            server_gone: false,
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
                if flags.is_empty() {
                    Failure {
                        status: status::SERVER_FAILURE,
                        message: format!(
                            "the server answered {what} with an error: {} ({})",
                            one_line(&e.message),
                            e.code
                        ),
                        server_gone: false,
                    }
                } else {
                    Failure::usage(format!(
                        "{what} needs the client capability {}: pass {}",
                        needs.join(", "),
                        flags.join(", ")
                    ))
                }
            }
            Error::Rpc(e) => Failure {
                status: status::SERVER_FAILURE,
                message: format!(
                    "the server answered {what} with an error: {} ({})",
                    one_line(&e.message),
                    e.code
                ),
                server_gone: false,
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
            eprintln!("mcp-stdio: {message}");
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
    let stderr = Arc::new(Stderr::new(opts.wire));
    ExitCode::from(run(&opts, &stderr))
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
        stderr.line(&format!("mcp-stdio: {}", one_line(&failure.message)));
        failure.status
    };
    // Unbounded: the client's notes are rate-limited, and a run is short.
    if let Command::ServeHttp(serve) = &opts.command {
        return serve_http::run(opts, serve, stderr).unwrap_or_else(fail);
    }
    let (note_tx, notes) = crossbeam_channel::unbounded();
    let (client, signals, asker) = match start(opts, stderr, note_tx) {
        Ok(started) => started,
        Err(failure) => return fail(failure),
    };
    let res = commands::run(&commands::Ctx {
        client: &client,
        opts,
        stderr,
        asker: &asker,
        signals,
    });
    stderr.clear();
    let status = res.unwrap_or_else(|mut failure| {
        if let Some(death) = failure.server_gone.then(|| death_note(&notes)).flatten() {
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
    // a person watching the wire.
    let closed = client.close();
    if opts.wire {
        match closed {
            Ok(Some(status)) => {
                stderr.line(&format!(
                    "· closed the server's input; it exited ({status})"
                ));
            }
            Ok(None) => {}
            Err(e) => stderr.line(&format!("· closing the server: {e}")),
        }
    }
    status
}

/// How the client's note on a response to no request of its begins.
const SKIPPED_RESPONSE: &str = "skipped a response with id";

/// The client's note on a server whose output ended: how it exited and
/// its last stderr lines. The client makes it after a moment's wait for
/// the exit, so this waits for it, briefly.
fn death_note(notes: &crossbeam_channel::Receiver<String>) -> Option<String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while let Ok(note) = notes.recv_deadline(deadline) {
        if note.starts_with("the server exited") || note.starts_with("the server closed its output")
        {
            return Some(note);
        }
    }
    None
}

/// `text` on one line: its lines trimmed, blank ones dropped, the rest
/// joined with ` | ` (as the server's last stderr lines are).
fn one_line(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines.join(" | ")
}

/// A connected client, with what the command needs beside it.
type Started = (Client, Option<crossbeam_channel::Receiver<()>>, Arc<Asker>);

/// Starts the server and connects to it.
fn start(
    opts: &Options,
    stderr: &Arc<Stderr>,
    notes: crossbeam_channel::Sender<String>,
) -> Result<Started, Failure> {
    let mut server = server(opts)?;
    let signals = match opts.command {
        Command::Listen(_) => interrupt::catch(),
        _ => None,
    };
    if let (Some(_), Target::Spawn(command)) = (&signals, &mut server.target) {
        interrupt::own_group(command);
    }
    let roots = ask::roots(&opts.roots).map_err(Failure::usage)?;
    let asker = Arc::new(Asker::new(
        opts.answers.clone(),
        opts.decline,
        opts.interactive || std::io::stdin().is_terminal(),
        opts.sampling_reply.clone(),
        roots,
        Arc::clone(stderr),
    ));
    let client = connect(opts, server, stderr, &asker, notes)?;
    Ok((client, signals, asker))
}

/// How the server is reached.
pub(crate) enum Target {
    /// A process to spawn.
    Spawn(std::process::Command),
    /// A Streamable HTTP server: its URL and the headers to send.
    Url(String, Vec<(String, String)>),
}

/// The server, and its name for messages (program or URL).
pub(crate) struct ServerTarget {
    pub target: Target,
    pub name: String,
}

/// The server the options name: `--url`, the command after `--`, or a
/// config entry (with a command or a `url`).
pub(crate) fn server(opts: &Options) -> Result<ServerTarget, Failure> {
    match &opts.server {
        Some(ServerSpec::Argv(argv)) => {
            let mut command = std::process::Command::new(&argv[0]);
            command.args(&argv[1..]);
            Ok(ServerTarget {
                target: Target::Spawn(command),
                name: argv[0].clone(),
            })
        }
        Some(ServerSpec::Url(url)) => Ok(ServerTarget {
            target: Target::Url(url.clone(), opts.headers.clone()),
            name: url.clone(),
        }),
        Some(ServerSpec::Config { file, name }) => {
            let config = config::load(file, name.as_deref()).map_err(Failure::usage)?;
            if let Some(url) = &config.url {
                // The entry's headers, then those of the command line.
                let headers = config
                    .headers
                    .iter()
                    .map(|(n, v)| (n.clone(), v.clone()))
                    .chain(opts.headers.iter().cloned())
                    .collect();
                return Ok(ServerTarget {
                    target: Target::Url(url.clone(), headers),
                    name: url.clone(),
                });
            }
            Ok(ServerTarget {
                target: Target::Spawn(config.command()),
                name: config.command,
            })
        }
        None => Err(Failure::usage("no server given")),
    }
}

/// Spawns the server with a client set up from the options.
fn connect(
    opts: &Options,
    server: ServerTarget,
    stderr: &Arc<Stderr>,
    asker: &Arc<Asker>,
    notes: crossbeam_channel::Sender<String>,
) -> Result<Client, Failure> {
    let elicit = Arc::clone(asker);
    let mut builder = Client::builder()
        .client_info("mcp-stdio", env!("CARGO_PKG_VERSION"))
        .era(opts.era)
        .on_elicitation(move |params| elicit.elicit(params));
    if let Some(timeout) = opts.timeout {
        builder = builder.request_timeout(timeout);
    }
    if opts.sampling_reply.is_some() {
        let sample = Arc::clone(asker);
        builder = builder.on_sampling(move |params| sample.sample(params));
    }
    if !opts.roots.is_empty() {
        let roots = Arc::clone(asker);
        builder = builder.on_roots(move || roots.roots());
    }
    // The client's notes: on stderr under --wire; kept either way, so
    // that a failure line can say how the server died.
    let shown = opts.wire.then(|| Arc::clone(stderr));
    builder = builder.trace(move |note| {
        if let Some(shown) = &shown {
            shown.line(&format!("· {note}"));
        }
        // The receiver lives as long as the run.
        let _ = notes.send(note.to_owned());
    });
    if opts.wire {
        let over_http = matches!(server.target, Target::Url(..));
        builder = show_wire(builder, stderr, over_http);
    }
    if opts.show_stderr {
        let echo = Arc::clone(stderr);
        builder = builder.stderr(move |line| echo.line(&format!("[server] {line}")));
    }
    if opts.log_level.is_some() {
        let logs = Arc::clone(stderr);
        builder = builder.on_log(move |log| logs.log(log));
    }
    let program = server.name.as_str();
    let client = match server.target {
        Target::Spawn(command) => {
            if opts.wire {
                stderr.line(&format!("· starting {program}"));
            }
            builder.spawn(command)
        }
        Target::Url(url, headers) => connect_url(builder, &url, headers),
    }
    .map_err(|e| start_failure(e, program, opts.era))?;
    if let (Some(level), mcp_stdio::Era::Legacy { .. }) = (opts.log_level, client.era()) {
        // The legacy era sets the level for the whole session.
        if let Err(e) = client.set_log_level(level) {
            stderr.line(&format!("mcp-stdio: logging/setLevel: {e}"));
        }
    }
    Ok(client)
}

/// `--wire`: every line both ways on stderr, `→` sent, `←` received.
/// Over HTTP (`over_http`) a modern request is cancelled by closing its
/// response stream, and the client's `notifications/cancelled` is never
/// POSTed (spec 2026-07-28 basic/transports/streamable-http): that is
/// shown as what happened. A legacy server (once `initialize` was sent)
/// is sent the notification, which shows as it is.
pub(crate) fn show_wire(
    builder: mcp_stdio::ClientBuilder,
    stderr: &Arc<Stderr>,
    over_http: bool,
) -> mcp_stdio::ClientBuilder {
    let wire = Arc::clone(stderr);
    let legacy = std::sync::atomic::AtomicBool::new(false);
    builder.wire(move |direction, line| {
        let arrow = match direction {
            WireDirection::Sent => '→',
            WireDirection::Received => '←',
        };
        if over_http && direction == WireDirection::Sent {
            match sent(line) {
                Sent::Initialize => legacy.store(true, std::sync::atomic::Ordering::Relaxed),
                Sent::Cancelled(id) if !legacy.load(std::sync::atomic::Ordering::Relaxed) => {
                    wire.line(&format!(
                        "· cancelled request {id} by closing its response stream (over HTTP no notifications/cancelled is sent)"
                    ));
                    return;
                }
                _ => {}
            }
        }
        wire.line(&format!("{arrow} {}", String::from_utf8_lossy(line)));
    })
}

/// What a sent line is, as far as `--wire` over HTTP cares.
enum Sent {
    Initialize,
    /// `notifications/cancelled`, with the id it cancels as JSON text.
    Cancelled(String),
    Other,
}

fn sent(line: &[u8]) -> Sent {
    #[derive(serde::Deserialize)]
    struct Message {
        method: Option<String>,
        params: Option<serde_json::Value>,
    }
    let Ok(message) = serde_json::from_slice::<Message>(line) else {
        return Sent::Other;
    };
    match message.method.as_deref() {
        Some("initialize") => Sent::Initialize,
        Some("notifications/cancelled") => {
            let id = message.params.as_ref().and_then(|p| p.get("requestId"));
            Sent::Cancelled(id.map_or_else(|| "?".to_owned(), ToString::to_string))
        }
        _ => Sent::Other,
    }
}

/// Connects to a Streamable HTTP server (a binary built with `http`).
#[cfg(feature = "http")]
pub(crate) fn connect_url(
    mut builder: mcp_stdio::ClientBuilder,
    url: &str,
    headers: Vec<(String, String)>,
) -> Result<Client, Error> {
    for (name, value) in headers {
        builder = builder.header(&name, &value);
    }
    builder.connect_url(url)
}

/// Without the `http` feature there is no HTTP client to connect with.
#[cfg(not(feature = "http"))]
pub(crate) fn connect_url(
    _builder: mcp_stdio::ClientBuilder,
    url: &str,
    _headers: Vec<(String, String)>,
) -> Result<Client, Error> {
    Err(Error::Protocol(format!(
        "cannot reach {url}: this mcp-stdio was built without the `http` feature (cargo install mcp-stdio --features http)"
    )))
}

/// Why the server could not be started or connected to. A server that
/// exited while starting, unless it was spoken to in the legacy era only,
/// may be an older one that crashes on the `server/discover` probe: the
/// message suggests `--era legacy`.
pub(crate) fn start_failure(e: Error, program: &str, era: mcp_stdio::EraPolicy) -> Failure {
    match e {
        Error::Io(e) if e.kind() == std::io::ErrorKind::NotFound => Failure::connection(format!(
            "cannot start the server: {program:?} was not found (is it installed, and on PATH?)"
        )),
        Error::Io(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Failure::connection(
            format!("cannot start the server: {program:?} is not executable"),
        ),
        Error::Io(e) => Failure::connection(format!("cannot start the server: {e}")),
        e @ Error::ServerExited { .. } if era != mcp_stdio::EraPolicy::LegacyOnly => {
            Failure::connection(format!(
                "{e} (a server on an older MCP SDK may fail on the server/discover probe: try --era legacy)"
            ))
        }
        e @ Error::ServerExited { .. } => Failure::connection(e.to_string()),
        Error::Timeout => Failure::connection(
            "the server did not answer while starting (no answer to server/discover, then none to initialize)",
        ),
        e => Failure::connection(format!("cannot connect to the server: {e}")),
    }
}

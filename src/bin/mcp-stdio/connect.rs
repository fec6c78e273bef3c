//! Reaching the server: the one the options name (`--url`, after `--`, a
//! config entry), the client set up from the options (timeouts, hooks, the
//! wire, the notes), and why it could not be started, in one line.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use mcp_stdio::{Client, Error, WireDirection};

use crate::args::{self, Command, Options, ServerSpec};
use crate::ask::{self, Asker};
use crate::stderr::Stderr;
use crate::url_for_people::url_for_people;
use crate::{Failure, config, interrupt};

/// A connected client, with what the command needs beside it.
type Started = (Client, Option<crossbeam_channel::Receiver<()>>, Arc<Asker>);

/// Starts the server and connects to it.
pub(crate) fn start(
    opts: &Options,
    stderr: &Arc<Stderr>,
    notes: crossbeam_channel::Sender<String>,
    said: &crossbeam_channel::Receiver<String>,
) -> Result<Started, Failure> {
    let server = server(opts)?;
    let signals = match opts.command {
        Command::Listen(_) => interrupt::catch(),
        _ => None,
    };
    // The server in a process group of its own only when this process
    // takes the signals (see `interrupt`): otherwise the terminal's Ctrl-C
    // ends both at once, as it ends every other command.
    let own_group = signals.is_some();
    let roots = ask::roots(&opts.roots).map_err(Failure::usage)?;
    let asker = Arc::new(Asker::new(
        opts.answers.clone(),
        opts.decline,
        opts.interactive || std::io::stdin().is_terminal(),
        opts.sampling_reply.clone(),
        roots,
        Arc::clone(stderr),
    ));
    let client = connect(opts, server, own_group, stderr, &asker, notes)
        .map_err(|(e, program)| start_failure(e, &program, opts, &notes_while_starting(said)))?;
    if let Some(reason) = client
        .legacy_reason()
        .filter(|r| r.starts_with("no answer to server/discover"))
    {
        // Silence is a guess, not an answer: say which era it made.
        stderr.note(&format!(
            "speaking the legacy era (initialize): {reason} (--era modern or --era legacy chooses)"
        ));
    }
    Ok((client, signals, asker))
}

/// How the server is reached.
pub(crate) enum Target {
    /// A process to spawn.
    Spawn(std::process::Command),
    /// A Streamable HTTP server: its URL, the headers to send and the CA
    /// files to trust (`--cacert`).
    Url(String, Vec<(String, String)>, Vec<PathBuf>),
}

/// The server, and its name for messages (program, or URL as
/// `url_for_people` shows it).
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
            target: Target::Url(url.clone(), opts.headers.clone(), opts.cacerts.clone()),
            name: url_for_people(url),
        }),
        Some(ServerSpec::Config { file, name }) => {
            let config = config::load(file, name.as_deref()).map_err(Failure::usage)?;
            if let Some(url) = &config.url {
                args::check_url(url, &format!("the url in {}", file.display()))
                    .map_err(|e| Failure::usage(e.0))?;
                // The entry's headers, then those of the command line.
                let headers = config
                    .headers
                    .iter()
                    .map(|(n, v)| (n.clone(), v.clone()))
                    .chain(opts.headers.iter().cloned())
                    .collect();
                return Ok(ServerTarget {
                    target: Target::Url(url.clone(), headers, opts.cacerts.clone()),
                    name: url_for_people(url),
                });
            }
            if !opts.cacerts.is_empty() {
                return Err(Failure::usage(args::cacert_for_stdio().0));
            }
            if !opts.headers.is_empty() {
                return Err(Failure::usage(args::header_for_stdio().0));
            }
            Ok(ServerTarget {
                target: Target::Spawn(config.command()),
                name: config.command,
            })
        }
        None => Err(Failure::usage("no server given")),
    }
}

/// The longest a start may take without `--timeout`: the era probe, the
/// wait for a server still installing itself (a first `npx` or `uvx` run),
/// `initialize`.
pub(crate) const DEFAULT_START: std::time::Duration = std::time::Duration::from_secs(60);

/// How the client's note on an elicitation it could not read (a form with
/// a field no form may have) begins.
const UNREADABLE_INPUT: &str = "could not read the server's request elicitation/create";

/// How the client's note on a server that has not read its probe begins.
const STILL_STARTING: &str = "the server has not read server/discover";

/// Spawns the server with a client set up from the options; the error,
/// and the server's name for messages.
fn connect(
    opts: &Options,
    server: ServerTarget,
    own_group: bool,
    stderr: &Arc<Stderr>,
    asker: &Arc<Asker>,
    notes: crossbeam_channel::Sender<String>,
) -> Result<Client, (Error, String)> {
    let elicit = Arc::clone(asker);
    let mut builder = Client::builder()
        .client_info("mcp-stdio", env!("CARGO_PKG_VERSION"))
        .era(opts.era)
        .own_process_group(own_group)
        .on_elicitation(move |params| elicit.elicit(params));
    // `--timeout` bounds the whole command: starting is part of it; a
    // login waits for a person (5 minutes at most) as well.
    let start = match opts.command {
        Command::Login => DEFAULT_START * 6,
        _ => DEFAULT_START,
    };
    builder = builder.start_timeout(opts.timeout.unwrap_or(start));
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
    let waiting = Arc::clone(stderr);
    let start_bound = opts.timeout.unwrap_or(DEFAULT_START).as_secs_f64();
    let unreadable = Arc::clone(asker);
    builder = builder.trace(move |note| {
        if let Some(why) = note.strip_prefix(UNREADABLE_INPUT) {
            // A form the client could not read never reached the asker:
            // the command fails all the same, saying why (the client
            // notes it before the server has its -32602).
            let why = why.split_once(": ").map_or(why, |(_, why)| why);
            let _ = unreadable.refuse(format!(
                "the server asked for input the command line cannot read (it was answered -32602): {why}"
            ));
        }
        if let Some(shown) = &shown {
            shown.client_note(note);
        } else if note.starts_with(STILL_STARTING) {
            // A wait nobody would understand otherwise.
            waiting.note(&format!(
                "the server has not read its input yet: still starting (a first npx or uvx run installs packages first); waiting up to {start_bound} s in all (--timeout SECS)"
            ));
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
        builder = builder.stderr(move |line| echo.server_stderr(line));
    }
    if opts.log_level.is_some() {
        let logs = Arc::clone(stderr);
        builder = builder.on_log(move |log| logs.log(log));
    }
    let program = server.name;
    let client = match server.target {
        Target::Spawn(command) => {
            if opts.wire {
                stderr.client_note(&format!("starting {program}"));
            }
            builder.spawn(command)
        }
        Target::Url(url, headers, cacerts) => {
            let interactive = opts.interactive
                || opts.command == Command::Login
                || std::io::stdin().is_terminal();
            connect_url(builder, &url, headers, cacerts, interactive, stderr)
        }
    }
    .map_err(|e| (e, program))?;
    if let (Some(level), mcp_stdio::Era::Legacy { .. }) = (opts.log_level, client.era()) {
        // The legacy era sets the level for the whole session.
        if let Err(e) = client.set_log_level(level) {
            stderr.note(&format!("logging/setLevel: {e}"));
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
        if over_http && direction == WireDirection::Sent {
            match sent(line) {
                Sent::Initialize => legacy.store(true, std::sync::atomic::Ordering::Relaxed),
                Sent::Cancelled(id) if !legacy.load(std::sync::atomic::Ordering::Relaxed) => {
                    wire.client_note(&format!(
                        "cancelled request {id} by closing its response stream (over HTTP no notifications/cancelled is sent)"
                    ));
                    return;
                }
                _ => {}
            }
        }
        wire.wire(
            direction == WireDirection::Sent,
            &String::from_utf8_lossy(line),
        );
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

/// Connects to a Streamable HTTP server (a binary built with `http`),
/// authorizing with OAuth when it asks (`login`), unless the options give
/// an `Authorization` header of their own;
/// trusting the CAs of `cacerts` too (`https`; `check_url` refused an
/// `https://` URL in a build without it, and an `http://` one needs none).
#[cfg(feature = "http")]
pub(crate) fn connect_url(
    mut builder: mcp_stdio::ClientBuilder,
    url: &str,
    headers: Vec<(String, String)>,
    cacerts: Vec<PathBuf>,
    interactive: bool,
    stderr: &Arc<Stderr>,
) -> Result<Client, Error> {
    let own = headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("authorization"));
    for (name, value) in headers {
        builder = builder.header(&name, &value);
    }
    if !own && let Some(oauth) = crate::login::oauth(url, interactive, stderr) {
        builder = builder.oauth(oauth);
    }
    #[cfg(feature = "https")]
    for file in cacerts {
        builder = builder.add_ca_file(file);
    }
    #[cfg(not(feature = "https"))]
    let _ = cacerts;
    builder.connect_url(url)
}

/// Without the `http` feature there is no HTTP client to connect with.
#[cfg(not(feature = "http"))]
pub(crate) fn connect_url(
    _builder: mcp_stdio::ClientBuilder,
    url: &str,
    _headers: Vec<(String, String)>,
    _cacerts: Vec<PathBuf>,
    _interactive: bool,
    _stderr: &Arc<Stderr>,
) -> Result<Client, Error> {
    Err(Error::Protocol(format!(
        "cannot reach {}: this mcp-stdio was built without the `http` feature (cargo install mcp-stdio --features http)",
        url_for_people(url)
    )))
}

/// The client's notes while it started (they come on a thread of their
/// own: those of the last moment are waited for, 50 ms after the last one
/// and half a second at most).
fn notes_while_starting(notes: &crossbeam_channel::Receiver<String>) -> Vec<String> {
    let now = std::time::Instant::now();
    let end = now + std::time::Duration::from_millis(500);
    let mut said: Vec<String> = notes.try_iter().collect();
    let quiet = || (std::time::Instant::now() + std::time::Duration::from_millis(50)).min(end);
    while let Ok(note) = notes.recv_deadline(quiet()) {
        said.push(note);
    }
    said
}

/// Why the server could not be started or connected to, with what the
/// client noted while it tried (`said`). A server that exited while
/// starting, unless it was spoken to with `initialize` already (`--era
/// legacy`, or the client's own second start), may be an older one that
/// crashes on the `server/discover` probe: the message suggests `--era
/// legacy`. A start that ran out of time says which step it was in.
pub(crate) fn start_failure(e: Error, program: &str, opts: &Options, said: &[String]) -> Failure {
    let era = opts.era;
    let noted = |start: &str| said.iter().any(|n| n.starts_with(start));
    let spoke_initialize = era == mcp_stdio::EraPolicy::LegacyOnly
        || noted("the server is legacy")
        || said
            .iter()
            .any(|n| n.contains("starting it again to speak initialize"));
    match e {
        // The client's own word for a transport that failed (a connection
        // refused), not the server's.
        Error::Rpc(e) if Error::Rpc(e.clone()).is_transport_failure() => {
            Failure::connection(format!("cannot connect to the server: {}", e.message))
        }
        Error::Io(e) if e.kind() == std::io::ErrorKind::NotFound => Failure::connection(format!(
            "cannot start the server: {program:?} was not found (is it installed, and on PATH?)"
        )),
        Error::Io(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Failure::connection(
            format!("cannot start the server: {program:?} is not executable"),
        ),
        Error::Io(e) => Failure::connection(format!("cannot start the server: {e}")),
        e @ Error::ServerExited { .. } if !spoke_initialize => Failure::connection(format!(
            "{e} (a server on an older MCP SDK may fail on the server/discover probe: try --era legacy)"
        )),
        e @ Error::ServerExited { .. } => Failure::connection(e.to_string()),
        Error::Timeout => {
            let what = if era == mcp_stdio::EraPolicy::LegacyOnly {
                "no answer to initialize"
            } else if noted("the server has read nothing of its input") {
                "it read nothing of its input (still installing, or not an MCP server?)"
            } else if spoke_initialize {
                "no answer to server/discover, then none to initialize"
            } else {
                "no answer to server/discover"
            };
            let bound = opts.timeout.unwrap_or(DEFAULT_START).as_secs_f64();
            Failure::connection(format!(
                "the server did not answer while starting: {what} within {bound} s"
            ))
        }
        e => Failure::connection(format!("cannot connect to the server: {e}")),
    }
}

//! `serve-http`: the server after `--` (or from `--config`) served over
//! Streamable HTTP to clients of both eras, through one child process and
//! one client (`mcp_stdio::proxy`), with the HTTP server's Origin, Host,
//! size and authorization options. What supergateway (npm) and mcp-proxy
//! (PyPI) do in a Node or Python process.
//!
//! The client declares no elicitation, sampling or roots of its own: a
//! modern server's requests for input reach the HTTP caller as multi
//! round-trip results; a legacy server is not asked to send any.

use std::sync::Arc;
#[cfg(all(feature = "server", feature = "http"))]
use std::sync::{Mutex, PoisonError};

use crate::Failure;
use crate::args::{Options, ServeHttp};
use crate::stderr::Stderr;

/// Serves until SIGTERM or SIGINT (Ctrl-C), then stops as a server does
/// (the requests in flight have the grace period) and returns 0; or until
/// the listener fails. Either way the child is then shut down as a client
/// does (spec 2026-07-28 basic/transports/stdio, "Shutdown": its input
/// closed, then SIGTERM, then SIGKILL): in a process group of its own, it
/// hears no Ctrl-C, and this process's exit alone would leave a child that
/// does not watch its input running. A signal while it starts (a child
/// that never answers its lists, say) stops the child and ends the
/// command: 130. One during the client's own start (the era probe,
/// `initialize`), before there is a client to close, is acted on when
/// that start ends: within `--timeout`, or `connect::DEFAULT_START`.
#[cfg(all(feature = "server", feature = "http"))]
pub fn run(opts: &Options, serve: &ServeHttp, stderr: &Arc<Stderr>) -> Result<u8, Failure> {
    use mcp_stdio::{Client, RestartPolicy};

    let mut target = crate::connect::server(opts)?;
    if let Some(warning) = &serve.token_file_warning {
        stderr.note(warning);
    }
    // The child in a group of its own when this process takes the
    // signals: the terminal's Ctrl-C reaches this process alone, which
    // ends the child (and what it started) when it is done with it.
    let signals = crate::interrupt::catch();
    // The token is for the HTTP callers, not for the child, which would
    // otherwise inherit it with the rest of the environment.
    if let crate::connect::Target::Spawn(command) = &mut target.target {
        command.env_remove(crate::args::BEARER_TOKEN_ENV);
        command.env_remove(crate::args::INTROSPECT_CREDENTIALS_ENV);
    }
    let mut builder = Client::builder()
        .client_info("mcp-stdio serve-http", env!("CARGO_PKG_VERSION"))
        .era(opts.era)
        .own_process_group(signals.is_some());
    builder = builder.start_timeout(opts.timeout.unwrap_or(crate::connect::DEFAULT_START));
    if let Some(timeout) = opts.timeout {
        builder = builder.request_timeout(timeout);
    }
    let notes = Arc::clone(stderr);
    builder = builder.trace(move |note| notes.note(note));
    if opts.show_stderr {
        let echo = Arc::clone(stderr);
        builder = builder.stderr(move |line| echo.server_stderr(line));
    }
    if opts.wire {
        let over_http = matches!(target.target, crate::connect::Target::Url(..));
        builder = crate::connect::show_wire(builder, stderr, over_http);
    }
    let program = target.name.clone();
    // Heard from the start: a signal queued for a serving loop not yet
    // begun would end nothing.
    let stage = Arc::new(Mutex::new(Stage::default()));
    let heard = signals.and_then(|signals| hear(signals, &stage, stderr, &program));
    let client = match target.target {
        // A child that dies is started again (five times at most): a
        // gateway outlives a crash of what it serves.
        crate::connect::Target::Spawn(command) => builder
            .restart(RestartPolicy {
                max_restarts: 5,
                backoff: std::time::Duration::from_millis(200),
            })
            .spawn(command),
        // A gateway has no one to ask: the tokens `login` kept, or none.
        crate::connect::Target::Url(url, headers, cacerts) => {
            crate::connect::connect_url(builder, &url, headers, cacerts, false, stderr)
        }
    }
    .map(Arc::new);
    let client = match client {
        Ok(client) if lock(&stage).starting(&client) => client,
        Ok(client) => {
            let _ = client.close_shared();
            return Err(interrupted(&program));
        }
        Err(_) if lock(&stage).interrupted => return Err(interrupted(&program)),
        Err(e) => return Err(crate::connect::start_failure(e, &program, opts, &[])),
    };
    let served = serve_through(&client, serve, stderr, &program, &stage);
    if lock(&stage).interrupted
        && let Some(heard) = heard
    {
        // Its close of the child while this one starts: done before the
        // process ends.
        let _ = heard.join();
    }
    let _ = client.close_shared();
    served
}

/// What a signal stops: the start (the client, once there is one, is
/// closed, which fails what waits on the child) or the serving.
#[cfg(all(feature = "server", feature = "http"))]
#[derive(Default)]
struct Stage {
    interrupted: bool,
    /// The child died and is not started again: serving stopped.
    child_gone: bool,
    /// Serving ended (the child is closed next).
    served: bool,
    client: Option<Arc<mcp_stdio::Client>>,
    stop: Option<mcp_stdio::StopHandle>,
}

#[cfg(all(feature = "server", feature = "http"))]
impl Stage {
    /// The client is made: a signal from now on closes it. `false` when
    /// one came already.
    fn starting(&mut self, client: &Arc<mcp_stdio::Client>) -> bool {
        self.client = Some(Arc::clone(client));
        !self.interrupted
    }

    /// Serving begins: a signal from now on stops it. `false` when one
    /// came already.
    fn serving(&mut self, stop: mcp_stdio::StopHandle) -> bool {
        self.stop = Some(stop);
        !self.interrupted
    }
}

#[cfg(all(feature = "server", feature = "http"))]
fn lock(stage: &Mutex<Stage>) -> std::sync::MutexGuard<'_, Stage> {
    stage.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The thread that hears the first SIGTERM or SIGINT (later ones change
/// nothing): while serving it stops the server (the requests in flight
/// are answered first); while starting it closes the client (what the
/// start waits on fails). `None` when the thread cannot be started: then
/// a signal is only queued, and the process is ended some other way.
#[cfg(all(feature = "server", feature = "http"))]
fn hear(
    signals: crossbeam_channel::Receiver<()>,
    stage: &Arc<Mutex<Stage>>,
    stderr: &Arc<Stderr>,
    program: &str,
) -> Option<std::thread::JoinHandle<()>> {
    let (stage, said, program) = (Arc::clone(stage), Arc::clone(stderr), program.to_owned());
    std::thread::Builder::new()
        .name("mcp-stdio-signals".into())
        .spawn(move || {
            if signals.recv().is_err() {
                return;
            }
            let (client, stop) = {
                let mut stage = lock(&stage);
                stage.interrupted = true;
                (stage.client.clone(), stage.stop.clone())
            };
            if let Some(stop) = stop {
                said.line("mcp-stdio: interrupted (SIGTERM or SIGINT): stopped serving; the requests in flight are answered first");
                stop.stop();
            } else if let Some(client) = client {
                said.line(&format!(
                    "mcp-stdio: interrupted (SIGTERM or SIGINT) while starting: stopping {program}"
                ));
                let _ = client.close_shared();
            }
        })
        .ok()
}

#[cfg(all(feature = "server", feature = "http"))]
fn interrupted(program: &str) -> Failure {
    Failure {
        status: crate::status::INTERRUPTED,
        message: format!("interrupted (SIGTERM or SIGINT) while starting {program}"),
        server_gone: false,
        rpc: None,
    }
}

/// Lists what the server offers, then serves it over HTTP until stopped.
#[cfg(all(feature = "server", feature = "http"))]
fn serve_through(
    client: &Arc<mcp_stdio::Client>,
    serve: &ServeHttp,
    stderr: &Arc<Stderr>,
    program: &str,
    stage: &Arc<Mutex<Stage>>,
) -> Result<u8, Failure> {
    use mcp_stdio::{HttpOptions, ProtectedResource, Unauthorized};

    let proxy = mcp_stdio::proxy::serve_as(Arc::clone(client)).map_err(|e| {
        if lock(stage).interrupted {
            return interrupted(program);
        }
        Failure::connection(format!("listing what {program} offers: {e}"))
    })?;
    let listener = std::net::TcpListener::bind(&serve.listen).map_err(|e| {
        Failure::usage(format!(
            "cannot listen on {}: {e} (--listen HOST:PORT)",
            serve.listen
        ))
    })?;
    let mut options = HttpOptions::new();
    for origin in &serve.allow_origins {
        options = options.allow_origin(origin);
    }
    for host in &serve.allow_hosts {
        options = options.allow_host(host);
    }
    if let Some(max) = serve.max_body_bytes {
        options = options.max_body_bytes(max);
    }
    if let Some(token) = serve.bearer_token.clone() {
        options = options.authorize(move |headers| {
            if headers
                .get("authorization")
                .is_some_and(|h| bearer_is(h, &token))
            {
                Ok(())
            } else {
                Err(Unauthorized::new(r#"Bearer realm="mcp-stdio""#)
                    .message("send Authorization: Bearer with the token serve-http was given"))
            }
        });
    }
    let addr = listener
        .local_addr()
        .map_or_else(|_| serve.listen.clone(), |a| a.to_string());
    if let Some(oauth) = &serve.oauth {
        // The canonical URI, by default where this serves (as bound: a
        // port 0 is the one taken).
        let id = (oauth.resource.clone()).unwrap_or_else(|| format!("http://{addr}/mcp"));
        let mut resource = ProtectedResource::new(&id)
            .scopes_supported(oauth.scopes.iter().cloned())
            .require_scopes(oauth.scopes.iter().cloned());
        for issuer in &oauth.authorization_servers {
            resource = resource.authorization_server(issuer);
        }
        stderr.line(&format!(
            "mcp-stdio: protected resource {id}; its metadata: {}",
            resource.metadata_url()
        ));
        options =
            options.protected_resource(resource, crate::oauth::validator(&oauth.tokens, stderr));
    }
    if !lock(stage).serving(proxy.stop_handle()) {
        return Err(interrupted(program));
    }
    watch_child(client, proxy.stop_handle(), stage, stderr, program);
    stderr.line(&format!(
        "mcp-stdio: serving {program} at http://{addr}/mcp"
    ));
    let served = proxy.serve_http(listener, options);
    lock(stage).served = true;
    served.map_err(|e| Failure::connection(format!("serving HTTP on {addr}: {e}")))?;
    if lock(stage).child_gone {
        return Err(Failure::connection(format!(
            "{program} exited and is not started again: stopped serving"
        )));
    }
    Ok(0)
}

/// Stops serving once the child is gone for good (it died after its
/// restarts were used up, or a restart failed): a gateway that answers
/// every request with an error for the rest of its life is never started
/// again by what supervises it; one that exits is. Looked at every
/// 200 ms, on a thread that ends with the serving (a signal's stop, or
/// the listener's failure, is not the child's).
#[cfg(all(feature = "server", feature = "http"))]
fn watch_child(
    client: &Arc<mcp_stdio::Client>,
    stop: mcp_stdio::StopHandle,
    stage: &Arc<Mutex<Stage>>,
    stderr: &Arc<Stderr>,
    program: &str,
) {
    let (client, stage) = (Arc::clone(client), Arc::clone(stage));
    let (said, program) = (Arc::clone(stderr), program.to_owned());
    let _ = std::thread::Builder::new()
        .name("mcp-stdio-child-watch".into())
        .spawn(move || {
            loop {
                if lock(&stage).served {
                    return;
                }
                if client.is_gone() {
                    {
                        let mut stage = lock(&stage);
                        if stage.interrupted || stage.served {
                            return;
                        }
                        stage.child_gone = true;
                    }
                    said.line(&format!(
                        "mcp-stdio: {program} exited and is not started again: stopping; the requests in flight are answered first"
                    ));
                    stop.stop();
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
        });
}

/// Whether an `Authorization` field carries `token` as a bearer token:
/// the scheme in any case (RFC 9110 11.1: case-insensitive, as the OAuth
/// mode takes it), the token compared in time that does not depend on
/// where it first differs.
#[cfg(all(feature = "server", feature = "http"))]
fn bearer_is(field: &str, token: &str) -> bool {
    let Some((scheme, sent)) = field.split_once(' ') else {
        return false;
    };
    let sent = sent.trim_start_matches(' ').as_bytes();
    let differs = (sent.iter().zip(token.as_bytes())).fold(0u8, |acc, (a, b)| acc | (a ^ b));
    scheme.eq_ignore_ascii_case("bearer") && sent.len() == token.len() && differs == 0
}

/// Without the `http` feature (or the `server` one) there is nothing to
/// serve with.
#[cfg(not(all(feature = "server", feature = "http")))]
pub fn run(_opts: &Options, _serve: &ServeHttp, _stderr: &Arc<Stderr>) -> Result<u8, Failure> {
    Err(Failure::usage(
        "serve-http needs a binary built with the server and http features (cargo install mcp-stdio --features http)",
    ))
}

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

use crate::Failure;
use crate::args::{Options, ServeHttp};
use crate::stderr::Stderr;

/// Serves until SIGTERM or SIGINT (Ctrl-C), then stops as a server does
/// (the requests in flight have the grace period) and returns 0; or until
/// the listener fails.
#[cfg(all(feature = "server", feature = "http"))]
pub fn run(opts: &Options, serve: &ServeHttp, stderr: &Arc<Stderr>) -> Result<u8, Failure> {
    use mcp_stdio::{Client, HttpOptions, RestartPolicy, Unauthorized};

    let mut target = crate::connect::server(opts)?;
    // The child in a group of its own: the terminal's Ctrl-C reaches this
    // process alone, which ends the child when it is done with it.
    let signals = crate::interrupt::catch();
    if let (Some(_), crate::connect::Target::Spawn(command)) = (&signals, &mut target.target) {
        crate::interrupt::own_group(command);
    }
    // The token is for the HTTP callers, not for the child, which would
    // otherwise inherit it with the rest of the environment.
    if let crate::connect::Target::Spawn(command) = &mut target.target {
        command.env_remove(crate::args::BEARER_TOKEN_ENV);
    }
    let mut builder = Client::builder()
        .client_info("mcp-stdio serve-http", env!("CARGO_PKG_VERSION"))
        .era(opts.era);
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
    let client = match target.target {
        // A child that dies is started again (five times at most): a
        // gateway outlives a crash of what it serves.
        crate::connect::Target::Spawn(command) => builder
            .restart(RestartPolicy {
                max_restarts: 5,
                backoff: std::time::Duration::from_millis(200),
            })
            .spawn(command),
        crate::connect::Target::Url(url, headers) => {
            crate::connect::connect_url(builder, &url, headers)
        }
    }
    .map_err(|e| crate::connect::start_failure(e, &program, opts, &[]))?;
    let proxy = mcp_stdio::proxy::serve_as(client)
        .map_err(|e| Failure::connection(format!("listing what {program} offers: {e}")))?;
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
        let expected = format!("Bearer {token}");
        options = options.authorize(move |headers| {
            if headers.get("authorization") == Some(expected.as_str()) {
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
    stderr.line(&format!(
        "mcp-stdio: serving {program} at http://{addr}/mcp"
    ));
    if let Some(signals) = signals {
        let (stop, said) = (proxy.stop_handle(), Arc::clone(stderr));
        // Without its thread a signal is only queued, and the process
        // serves on: then it is ended some other way, as before.
        let _ = std::thread::Builder::new()
            .name("mcp-stdio-signals".into())
            .spawn(move || {
                if signals.recv().is_ok() {
                    said.line("mcp-stdio: interrupted (SIGTERM or SIGINT): stopped serving; the requests in flight are answered first");
                    stop.stop();
                }
            });
    }
    proxy
        .serve_http(listener, options)
        .map_err(|e| Failure::connection(format!("serving HTTP on {addr}: {e}")))?;
    Ok(0)
}

/// Without the `http` feature (or the `server` one) there is nothing to
/// serve with.
#[cfg(not(all(feature = "server", feature = "http")))]
pub fn run(_opts: &Options, _serve: &ServeHttp, _stderr: &Arc<Stderr>) -> Result<u8, Failure> {
    Err(Failure::usage(
        "serve-http needs a binary built with the server and http features (cargo install mcp-stdio --features http)",
    ))
}

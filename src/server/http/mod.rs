//! [`Server::serve_http`]: the Streamable HTTP transport (spec 2026-07-28
//! basic/transports/streamable-http), behind the `http` feature.
//!
//! ```text
//! listener ──► mcp-http: accept, count ──► mcp-http-conn (one per connection, up to a cap)
//!                 read a request (`crate::http`), check it (`guard`), read its body
//!                 POST ──► a ConnHandle of its own, output = the response body (`body`)
//!                          reader::dispatch: the core, exactly as for a stdio line
//!                          watch the socket until the response is complete:
//!                          a close cancels the request (`exchange`)
//!                 GET (a legacy session's) ──► a ConnHandle that hears the session's
//!                          notifications until it ends (`stream`, `sessions`)
//! ```
//!
//! Each POST is a connection of the core's (`Conn`): its refusals, kernel,
//! handlers, cancellation and subscriptions are the ones stdio uses. One
//! JSON-RPC message per POST means no request in it waits behind another;
//! a connection's thread serves its POSTs one after another (keep-alive),
//! and concurrency comes from connections, as HTTP clients expect.

pub(crate) mod auth;
mod body;
mod exchange;
mod guard;
mod mirror;
mod open;
pub(crate) mod options;
mod refusal;
#[cfg(feature = "legacy")]
mod sessions;
#[cfg(feature = "legacy")]
mod stream;
mod tcp;

use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use options::HttpOptions;
use tcp::{Site, serve_connection};

use crate::error::Error;
use crate::http::write_response;
use crate::jsonrpc::{ErrorObject, encode_error};
use crate::server::Server;
use crate::server::connections::Connection;
use crate::server::event::ServerEvent;

impl Server {
    /// Serves MCP over Streamable HTTP on `listener`, at the endpoint
    /// [`HttpOptions::path`] (default `/mcp`): blocks until
    /// [`StopHandle::stop`](crate::StopHandle::stop), then waits for the
    /// requests in flight (see [`ServerBuilder::shutdown_grace`](crate::ServerBuilder::shutdown_grace))
    /// and returns.
    ///
    /// Bind the listener to `127.0.0.1` unless the server must be reached
    /// from elsewhere (spec 2026-07-28: local servers SHOULD bind only to
    /// localhost); a loopback listener answers only to loopback `Host`
    /// names, against DNS rebinding.
    ///
    /// Each POST is served like a line on stdio, as a connection of its
    /// own whose output is the response: `application/json` when the reply
    /// is the first thing the request writes, `text/event-stream` when a
    /// notification comes first (progress, logs, a subscription's
    /// acknowledgment) or nothing came for a keep-alive interval. Closing
    /// the response cancels the request (not a legacy one, which runs to
    /// its end: that era cancels with `notifications/cancelled`). The legacy era
    /// (2025-03-26 to 2025-11-25) is served too, with the `legacy`
    /// feature: see the crate's guide for what such a client does not get.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), mcp_stdio::Error> {
    /// let server = mcp_stdio::Server::builder("demo", "1.0.0").build();
    /// let listener = std::net::TcpListener::bind("127.0.0.1:8080")?;
    /// eprintln!("serving http://{}/mcp", listener.local_addr()?);
    /// server.serve_http(listener, mcp_stdio::HttpOptions::new())
    /// # }
    /// ```
    ///
    /// Returns an error when the listener fails, or at once when
    /// [`HttpOptions::protected_resource`] was given a resource that
    /// cannot be served (not an absolute `http(s)` URI, no authorization
    /// server, or the resource or an authorization server over `http://`
    /// on a host other than loopback).
    pub fn serve_http(&self, listener: TcpListener, options: HttpOptions) -> Result<(), Error> {
        if let Some(why) = (options.protection.as_ref()).and_then(|p| p.metadata.unusable()) {
            return Err(Error::Io(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                why,
            )));
        }
        let local = listener.local_addr()?;
        let stop = Arc::new(Waker {
            stopped: AtomicBool::new(false),
            local,
        });
        let key = self.inner.connections.connect(stop.clone());
        #[cfg(feature = "legacy")]
        let max_sessions = (options.max_sessions, options.max_session_bytes);
        let site = Arc::new(Site {
            inner: Arc::clone(&self.inner),
            options,
            // `::ffff:127.0.0.1` is a loopback address too.
            loopback: local.ip().to_canonical().is_loopback(),
            #[cfg(feature = "legacy")]
            sessions: sessions::Sessions::new(max_sessions.0, max_sessions.1),
            open: Default::default(),
            followers: Default::default(),
        });
        // The legacy sessions hear what is published as one connection.
        #[cfg(feature = "legacy")]
        let sessions = self.inner.connections.connect(site.sessions.listener());
        let mut result = Ok(());
        for socket in listener.incoming() {
            if stop.stopped.load(Ordering::Acquire) {
                break;
            }
            let socket = match socket {
                Ok(socket) => socket,
                // A connection that failed before it was accepted, or no
                // descriptor left: the next one may do.
                Err(e) if is_transient(&e) => continue,
                Err(e) => {
                    result = Err(Error::Io(e));
                    break;
                }
            };
            let Some(open) = site.open.enter(&socket, site.options.max_connections) else {
                busy(socket);
                continue;
            };
            let serving = Arc::clone(&site);
            let started = thread::Builder::new()
                .name("mcp-http-conn".into())
                .spawn(move || {
                    let _leaves = Leaves(&serving.open, open);
                    serve_connection(&serving, socket, open);
                });
            if started.is_err() {
                site.open.leave(open);
            }
        }
        // The requests being served have the grace period, then a moment
        // to write the error that ends the ones still running.
        let grace = self.inner.config.shutdown_grace;
        let deadline = Instant::now().checked_add(grace.saturating_add(Duration::from_secs(1)));
        site.open.close(deadline);
        #[cfg(feature = "legacy")]
        self.inner.connections.disconnect(sessions);
        self.inner.connections.disconnect(key);
        result
    }
}

/// Counts connection `.1` out of the open ones when its thread ends, however
/// it ends: a panic (in the application's authorization hook, say) would
/// otherwise keep its place at the cap, and its socket open, for good.
struct Leaves<'a>(&'a open::OpenConnections, u64);

impl Drop for Leaves<'_> {
    fn drop(&mut self) {
        self.0.leave(self.1);
    }
}

/// Whether accepting failed for this connection only.
fn is_transient(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionAborted | ConnectionReset | Interrupted | WouldBlock
    ) || e
        .raw_os_error()
        .is_some_and(|code| code == 24 || code == 23) // EMFILE, ENFILE
}

/// One connection too many: `503`, and closed, on the accept loop's
/// thread, which waits for nothing here: the socket is non-blocking, the
/// answer fits a fresh socket's buffer, and what the peer sent already is
/// read and dropped (so that the close does not reset the connection and
/// lose the answer) without waiting for more. A peer whose request comes
/// after the close may see a reset instead of the `503`: either way it
/// was turned away, and a silent one costs the loop nothing (each cost it
/// 20 ms of waiting before, so 100 of them held the next client for 2 s).
fn busy(socket: TcpStream) {
    if socket.set_nonblocking(true).is_err() {
        return;
    }
    // A JSON-RPC error without id, as every other refusal is (the same as
    // `tcp::gave_way`'s).
    let mut body = Vec::with_capacity(128);
    let error = ErrorObject::invalid_request("too many connections: retry in a moment");
    encode_error(&mut body, None, &error);
    let mut out = &socket;
    let _ = write_response(
        &mut out,
        503,
        &[("Retry-After", "1"), ("Content-Type", "application/json")],
        &body,
        false,
    );
    let _ = socket.shutdown(std::net::Shutdown::Write);
    let mut sink = [0u8; 8192];
    // At most 64 KiB: a peer that sends faster than this reads does not
    // keep the loop here.
    for _ in 0..8 {
        match (&socket).read(&mut sink) {
            Ok(1..) => {}
            _ => return,
        }
    }
}

/// Stops the accept loop: registered with the server's connections, its
/// `stop` wakes `accept` with a connection of its own.
struct Waker {
    stopped: AtomicBool,
    local: SocketAddr,
}

impl Connection for Waker {
    fn publish(&self, _: &ServerEvent) {}

    fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        let mut wake = self.local;
        if wake.ip().is_unspecified() {
            wake.set_ip(match wake {
                SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        // The connection only wakes `accept`; it is dropped at once.
        let _ = TcpStream::connect(wake);
    }
}

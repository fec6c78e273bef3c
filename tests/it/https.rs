//! The client over HTTPS (feature `https`): our client against our own
//! server behind a TLS terminator in this process (rustls's server side,
//! relaying the bytes of each connection to the plain HTTP server), with
//! the certificates of `tests/fixtures/tls/`. `tests/https.sh` does the
//! same through nginx and the command line.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use mcp_stdio::types::{CallToolResult, SubscriptionFilter, Tool};
use mcp_stdio::{
    Client, Era, EraPolicy, Error, HttpOptions, RequestOptions, Server, StopHandle,
    SubscriptionEvent,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ServerConfig, ServerConnection};
use serde_json::{Value, json};

use crate::support::WAIT;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tls");

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("{FIXTURES}/{name}")).unwrap()
}

/// The test CA, which signed `server.pem` and `elsewhere.pem`.
pub(crate) fn ca() -> Vec<u8> {
    fixture("ca.pem")
}

/// Our server on a plain loopback port, behind a TLS terminator that
/// presents `cert` (a file of `tests/fixtures/tls/`); both stopped when
/// dropped.
struct Https {
    /// The terminator's port.
    port: u16,
    stop: StopHandle,
    thread: Option<JoinHandle<Result<(), Error>>>,
    terminator: Terminator,
}

impl Https {
    fn url(&self, host: &str) -> String {
        format!("https://{host}:{}/mcp", self.port)
    }
}

impl Drop for Https {
    fn drop(&mut self) {
        self.terminator.stop();
        self.stop.stop();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(server: Server, cert: &str) -> Https {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let backend = listener.local_addr().unwrap();
    let stop = server.stop_handle();
    let thread = std::thread::spawn(move || server.serve_http(listener, HttpOptions::new()));
    let terminator = Terminator::start(backend, cert, true);
    Https {
        port: terminator.addr.port(),
        stop,
        thread: Some(thread),
        terminator,
    }
}

/// Accepts TLS connections on a loopback port and relays each one's
/// plaintext to `backend` and back, on two threads per connection; the
/// TLS state is shared under a lock held only to feed it or drain it,
/// never across a blocking read. A backend that ends its side gets a
/// `close_notify` sent (unless `close_notify` is false: a server that
/// just closes), then the TCP write side shut.
pub(crate) struct Terminator {
    pub(crate) addr: SocketAddr,
    stopped: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl Terminator {
    pub(crate) fn start(backend: SocketAddr, cert: &str, close_notify: bool) -> Terminator {
        let certs = CertificateDer::pem_slice_iter(&fixture(cert))
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_slice(&fixture("server.key")).unwrap();
        #[allow(
            deprecated,
            reason = "ring is the provider the crate uses (README, Remote servers)"
        )]
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap();
        let config = Arc::new(config);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stopped = Arc::new(AtomicBool::new(false));
        let stop = Arc::clone(&stopped);
        let accept = std::thread::spawn(move || {
            for socket in listener.incoming() {
                if stop.load(Ordering::Acquire) {
                    return;
                }
                let Ok(socket) = socket else { continue };
                let config = Arc::clone(&config);
                std::thread::spawn(move || relay(socket, backend, config, close_notify));
            }
        });
        Terminator {
            addr,
            stopped,
            accept: Some(accept),
        }
    }

    pub(crate) fn stop(&mut self) {
        self.stopped.store(true, Ordering::Release);
        // Wakes the accept loop, which then sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

/// One TLS connection relayed to `backend` until either side ends.
fn relay(socket: TcpStream, backend: SocketAddr, config: Arc<ServerConfig>, close_notify: bool) {
    let Ok(plain) = TcpStream::connect(backend) else {
        return;
    };
    let tls = Arc::new(Mutex::new(ServerConnection::new(config).unwrap()));
    let socket = Arc::new(socket);
    let (tls_up, socket_up, plain_up) = (
        Arc::clone(&tls),
        Arc::clone(&socket),
        plain.try_clone().unwrap(),
    );
    let up = std::thread::spawn(move || {
        let _ = client_to_backend(&tls_up, &socket_up, &plain_up);
        let _ = plain_up.shutdown(Shutdown::Write);
    });
    let _ = backend_to_client(&tls, &socket, &plain);
    // The backend ended its side: close_notify, then the TCP write side.
    if close_notify {
        let mut tls = tls.lock().unwrap();
        tls.send_close_notify();
        while tls.wants_write() {
            if tls.write_tls(&mut &*socket).is_err() {
                break;
            }
        }
    }
    let _ = socket.shutdown(Shutdown::Write);
    let _ = up.join();
}

fn client_to_backend(
    tls: &Mutex<ServerConnection>,
    socket: &TcpStream,
    mut plain: &TcpStream,
) -> io::Result<()> {
    let mut buf = vec![0; 16 * 1024];
    loop {
        let n = (&*socket).read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        let mut plaintext = Vec::new();
        let mut ended = false;
        {
            let mut tls = tls.lock().unwrap();
            let mut input = &buf[..n];
            while !input.is_empty() {
                tls.read_tls(&mut input)?;
                let state = tls.process_new_packets();
                while tls.wants_write() {
                    tls.write_tls(&mut &*socket)?;
                }
                if let Err(e) = state {
                    return Err(io::Error::other(e));
                }
            }
            let mut chunk = [0; 4096];
            loop {
                match tls.reader().read(&mut chunk) {
                    Ok(0) => {
                        ended = true;
                        break;
                    }
                    Ok(k) => plaintext.extend_from_slice(&chunk[..k]),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(e),
                }
            }
        }
        plain.write_all(&plaintext)?;
        if ended {
            return Ok(());
        }
    }
}

fn backend_to_client(
    tls: &Mutex<ServerConnection>,
    socket: &TcpStream,
    mut plain: &TcpStream,
) -> io::Result<()> {
    let mut buf = vec![0; 16 * 1024];
    loop {
        let n = plain.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        let mut tls = tls.lock().unwrap();
        tls.writer().write_all(&buf[..n])?;
        while tls.wants_write() {
            tls.write_tls(&mut &*socket)?;
        }
    }
}

/// The one line a failed `connect_url` says.
fn refusal(result: Result<Client, Error>) -> String {
    let Err(error) = result else {
        panic!("connected, where a refusal was expected");
    };
    let text = error.to_string();
    assert!(!text.contains('\n'), "more than one line: {text}");
    text
}

#[test]
fn a_self_signed_certificate_is_refused_in_one_line_naming_the_host_and_the_fix() {
    let https = serve(crate::everything::build(), "self-signed.pem");
    let text = refusal(Client::connect_url(&https.url("localhost")));
    assert!(text.contains("localhost"), "{text}");
    assert!(text.contains("not trusted"), "{text}");
    assert!(text.contains("--cacert"), "{text}");
    // Trusted once added, as its own CA.
    let client = Client::builder()
        .add_ca_pem(&fixture("self-signed.pem"))
        .connect_url(&https.url("localhost"))
        .unwrap();
    let echoed = client.call("echo", json!({ "text": "pinned" })).unwrap();
    assert_eq!(echoed.text_content(), "pinned");
}

/// What `openssl req -x509` makes by default (CA:TRUE) is refused as a
/// server's certificate even when it is trusted: the message says so.
#[test]
fn a_self_signed_ca_certificate_as_the_servers_is_refused_saying_why() {
    let https = serve(crate::everything::build(), "self-signed-ca.pem");
    let text = refusal(
        Client::builder()
            .add_ca_pem(&fixture("self-signed-ca.pem"))
            .connect_url(&https.url("localhost")),
    );
    assert!(text.contains("localhost"), "{text}");
    assert!(text.contains("CA:TRUE"), "{text}");
}

#[test]
fn a_certificate_for_another_name_is_refused_in_one_line() {
    let https = serve(crate::everything::build(), "elsewhere.pem");
    let text = refusal(
        Client::builder()
            .add_ca_pem(&ca())
            .connect_url(&https.url("127.0.0.1")),
    );
    assert!(text.contains("127.0.0.1"), "{text}");
    assert!(text.contains("elsewhere.invalid"), "{text}");
    assert!(text.contains("not valid for"), "{text}");
}

#[test]
fn a_modern_client_calls_tools_hears_progress_and_listens_over_https() {
    let https = serve(crate::everything::build(), "server.pem");
    let client = Client::builder()
        .add_ca_pem(&ca())
        .connect_url(&https.url("localhost"))
        .unwrap();
    assert!(
        matches!(client.era(), Era::Modern { .. }),
        "{:?}",
        client.era()
    );
    let echoed = client.call("echo", json!({ "text": "héllo" })).unwrap();
    assert_eq!(echoed.text_content(), "héllo");
    let (tx, rx) = crossbeam_channel::unbounded();
    let options = RequestOptions::new().on_progress(move |p| {
        let _ = tx.send(p.progress);
    });
    let done = client
        .call_tool_with("progress", json!({ "steps": 3 }), options)
        .unwrap();
    assert!(matches!(done, mcp_stdio::Outcome::Complete(r) if r.text_content() == "done"));
    assert_eq!(rx.try_iter().collect::<Vec<_>>(), [1.0, 2.0, 3.0]);
    let mut sub = client
        .listen(SubscriptionFilter {
            tools_list_changed: Some(true),
            ..Default::default()
        })
        .unwrap();
    client.call("toggle_tool", json!({})).unwrap();
    let heard = sub.recv_timeout(WAIT).unwrap();
    assert!(
        matches!(heard, Some(SubscriptionEvent::ToolsListChanged)),
        "{heard:?}"
    );
    // Eight threads at once, each on a TLS connection of its own.
    std::thread::scope(|s| {
        for n in 0..8 {
            let client = &client;
            s.spawn(move || {
                let text = format!("t{n}");
                let got = client.call("echo", json!({ "text": text })).unwrap();
                assert_eq!(got.text_content(), text);
            });
        }
    });
    client.close().unwrap();
}

#[test]
fn a_legacy_session_over_https_with_an_ip_literal() {
    let https = serve(crate::everything::build(), "server.pem");
    let client = Client::builder()
        .era(EraPolicy::LegacyOnly)
        .add_ca_pem(&ca())
        .connect_url(&https.url("127.0.0.1"))
        .unwrap();
    assert!(
        matches!(client.era(), Era::Legacy { .. }),
        "{:?}",
        client.era()
    );
    let echoed = client.call("echo", json!({ "text": "legacy" })).unwrap();
    assert_eq!(echoed.text_content(), "legacy");
    let mut sub = client
        .listen(SubscriptionFilter {
            tools_list_changed: Some(true),
            ..Default::default()
        })
        .unwrap();
    // A list change goes on the session's GET stream only, which the
    // client opens on a thread of its own: heard once it is open.
    let heard = (0..50).any(|_| {
        client.call("toggle_tool", json!({})).unwrap();
        sub.recv_timeout(Duration::from_millis(100)).unwrap()
            == Some(SubscriptionEvent::ToolsListChanged)
    });
    assert!(heard, "no tools/list_changed on the GET stream over TLS");
    // The session's DELETE goes over TLS too.
    client.close().unwrap();
}

// req: streamable-http:closing-the-stream-cancels
#[test]
fn cancelling_over_https_closes_the_stream_and_trips_the_handler() {
    let (started_tx, started) = crossbeam_channel::unbounded();
    let (tripped_tx, tripped) = crossbeam_channel::unbounded();
    let server = crate::everything::build_with(move |b| {
        b.tool(
            Tool::new("held", "Waits for its cancellation."),
            move |ctx, _: Value| {
                let _ = started_tx.send(());
                let _ = tripped_tx.send(ctx.wait_cancelled(WAIT));
                Ok(CallToolResult::text("not cancelled"))
            },
        )
    });
    let https = serve(server, "server.pem");
    let client = Client::builder()
        .add_ca_pem(&ca())
        .connect_url(&https.url("localhost"))
        .unwrap();
    let pending = client
        .start_request(
            "tools/call",
            json!({ "name": "held", "arguments": {} }),
            RequestOptions::new(),
        )
        .unwrap();
    started.recv_timeout(WAIT).unwrap();
    pending.cancel(Some("no longer needed"));
    assert_eq!(tripped.recv_timeout(WAIT), Ok(true));
    // The client goes on working on its other connections.
    let echoed = client.call("echo", json!({ "text": "after" })).unwrap();
    assert_eq!(echoed.text_content(), "after");
}

/// Over TLS too, a call of a client that declares the Tasks extension,
/// given up on, has its stream shut for sending only (the TCP socket
/// under the TLS) and read on for a late answer: the server still takes
/// the close as the cancellation at once, long before the client lets the
/// stream go (30 s after the give-up here).
#[test]
fn a_give_up_over_https_that_reads_on_for_a_late_task_still_trips_the_handler() {
    let (started_tx, started) = crossbeam_channel::unbounded();
    let (tripped_tx, tripped) = crossbeam_channel::unbounded();
    let server = crate::everything::build_with(move |b| {
        b.tool(
            Tool::new("held", "Waits for its cancellation."),
            move |ctx, _: Value| {
                let _ = started_tx.send(());
                let _ = tripped_tx.send(ctx.wait_cancelled(WAIT));
                Ok(CallToolResult::text("not cancelled"))
            },
        )
    });
    let https = serve(server, "server.pem");
    let client = Client::builder()
        .add_ca_pem(&ca())
        .tasks(true)
        .connect_url(&https.url("localhost"))
        .unwrap();
    let options = RequestOptions::new()
        .timeout(Duration::from_secs(30))
        .reset_timeout_on_progress(Duration::from_millis(200));
    let timed_out = client.call_tool_with("held", json!({}), options);
    assert!(matches!(timed_out, Err(Error::Timeout)), "{timed_out:?}");
    started.recv_timeout(WAIT).unwrap();
    assert_eq!(tripped.recv_timeout(WAIT), Ok(true));
    let echoed = client.call("echo", json!({ "text": "after" })).unwrap();
    assert_eq!(echoed.text_content(), "after");
}

#[test]
fn a_plain_http_server_behind_an_https_url_is_a_one_line_error() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = crate::everything::build();
    let stop = server.stop_handle();
    let thread = std::thread::spawn(move || server.serve_http(listener, HttpOptions::new()));
    let text = refusal(
        Client::builder()
            .add_ca_pem(&ca())
            .connect_url(&format!("https://127.0.0.1:{port}/mcp")),
    );
    assert!(text.contains("127.0.0.1"), "{text}");
    assert!(text.contains("http://"), "{text}");
    stop.stop();
    let _ = thread.join();
}

#[test]
fn extra_certificates_that_are_not_pem_are_a_one_line_error() {
    let text = refusal(
        Client::builder()
            .add_ca_pem(b"not a certificate")
            .connect_url("https://127.0.0.1:1/mcp"),
    );
    assert!(text.contains("no PEM certificate"), "{text}");
    let text = refusal(
        Client::builder()
            .add_ca_file(format!("{FIXTURES}/missing.pem"))
            .connect_url("https://127.0.0.1:1/mcp"),
    );
    assert!(text.contains("missing.pem"), "{text}");
}

/// A server that sends its handshake a byte at a time, each within the
/// socket's read timeout, is given up at the connect timeout (10 s) in all:
/// the handshake has one deadline, not one per read.
#[test]
fn a_handshake_trickled_a_byte_at_a_time_is_given_up_in_time() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = Arc::clone(&stop);
    let trickler = std::thread::spawn(move || {
        listener.set_nonblocking(true).unwrap();
        let mut sockets = Vec::new();
        while !stopping.load(Ordering::Acquire) {
            if let Ok((socket, _)) = listener.accept() {
                // A handshake record's header announcing 16 KiB.
                let _ = (&socket).write_all(&[0x16, 0x03, 0x03, 0x40, 0x00]);
                sockets.push(socket);
            }
            for mut socket in &sockets {
                let _ = socket.write_all(&[0]);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    let started = std::time::Instant::now();
    let text = refusal(
        Client::builder()
            .add_ca_pem(&ca())
            .connect_url(&format!("https://127.0.0.1:{port}/mcp")),
    );
    let took = started.elapsed();
    stop.store(true, Ordering::Release);
    let _ = trickler.join();
    assert!(text.contains("127.0.0.1"), "{text}");
    assert!(text.contains("in time"), "{text}");
    assert!(took < Duration::from_secs(40), "took {took:?}");
}

/// A plain backend for the terminator: `server/discover` answered with a
/// length, every `tools/call` with a body that the connection's end ends
/// (`Connection: close`, no length), the text `whole`; anything else `202`.
fn closing_backend() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for socket in listener.incoming() {
            let Ok(socket) = socket else { return };
            std::thread::spawn(move || {
                let mut reader = io::BufReader::new(socket.try_clone().unwrap());
                let mut writer = socket;
                while let Some(body) = read_body(&mut reader) {
                    let req: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    let answer = |result: Value| {
                        json!({ "jsonrpc": "2.0", "id": req["id"], "result": result }).to_string()
                    };
                    match req["method"].as_str().unwrap_or("") {
                        "server/discover" => {
                            let body = answer(json!({ "supportedVersions": ["2026-07-28"],
                                "capabilities": { "tools": {} },
                                "serverInfo": { "name": "closing", "version": "1" },
                                "resultType": "complete" }));
                            let head = format!(
                                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                                body.len()
                            );
                            let _ = writer.write_all(format!("{head}{body}").as_bytes());
                        }
                        "tools/call" => {
                            let body = answer(json!({
                                "content": [{ "type": "text", "text": "whole" }],
                                "resultType": "complete" }));
                            let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n";
                            let _ = writer.write_all(format!("{head}{body}").as_bytes());
                            let _ = writer.shutdown(Shutdown::Write);
                            return;
                        }
                        _ => {
                            let _ = writer
                                .write_all(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n");
                        }
                    }
                }
            });
        }
    });
    addr
}

/// One request's body (its head skipped); `None` at the connection's end.
fn read_body(reader: &mut io::BufReader<TcpStream>) -> Option<Vec<u8>> {
    use std::io::BufRead;
    let mut len = 0;
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        if line.trim_end().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            len = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    Some(body)
}

/// RFC 9112 section 9.8: a body that the connection's end ends is whole
/// only if `close_notify` came before the end; a TCP end without it may
/// have cut the body short, and the answer is refused rather than taken.
#[test]
fn a_body_ended_by_the_connections_end_needs_close_notify() {
    let backend = closing_backend();
    for close_notify in [true, false] {
        let mut terminator = Terminator::start(backend, "server.pem", close_notify);
        let client = Client::builder()
            .era(EraPolicy::ModernOnly)
            .add_ca_pem(&ca())
            .connect_url(&format!("https://localhost:{}/mcp", terminator.addr.port()))
            .unwrap();
        let called = client.call("anything", json!({}));
        match close_notify {
            true => assert_eq!(called.unwrap().text_content(), "whole"),
            false => {
                let error = called.unwrap_err().to_string();
                assert!(error.contains("could not be read"), "{error}");
            }
        }
        terminator.stop();
    }
}

/// Review httplate13: over TLS, the held stream (`late.rs`: the TCP
/// socket under the TLS shut for sending, no `close_notify`) is still
/// read on: a task the server makes as the client's side ends reaches
/// the client, which cancels it (`tasks/cancel`). The server is the
/// scripted plain one of `http_client`, behind a TLS terminator that
/// passes the client's end on as the end of its own side.
#[test]
fn over_https_a_task_made_as_a_call_gave_up_is_still_read_and_cancelled() {
    let (cancelled_tx, cancelled) = crossbeam_channel::unbounded::<Value>();
    let backend = crate::http_client::late_task_server("t-tls", cancelled_tx);
    let mut terminator = Terminator::start(backend, "server.pem", true);
    let client = Client::builder()
        .add_ca_pem(&ca())
        .era(mcp_stdio::EraPolicy::ModernOnly)
        .tasks(true)
        .connect_url(&format!("https://localhost:{}/mcp", terminator.addr.port()))
        .unwrap();
    let called = client.call_tool_with(
        "slow",
        json!({}),
        RequestOptions::new().timeout(Duration::from_secs(1)),
    );
    assert!(matches!(called, Err(Error::Timeout)), "{called:?}");
    assert_eq!(cancelled.recv_timeout(WAIT).ok(), Some(json!("t-tls")));
    drop(client);
    terminator.stop();
}

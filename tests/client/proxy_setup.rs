//! What the proxy's checks (`proxy_restarts.rs`, `proxy_listing.rs`)
//! share: a fake's start noted in the wire file and its input read a
//! line at a time through a hook, the events it noted, and the proxy
//! (`proxy::serve_as`) in front of a spawned server, with a caller of it.

use super::*;
use std::ffi::OsString;
use std::io::Read;

/// A fake's start: its wire file (from its environment), where it appends
/// `{"event":"started"}`, and whether this is the server's first start.
pub fn start_noted() -> (OsString, bool) {
    let path = std::env::var_os(WIRE_ENV).expect("the wire file");
    let first = std::fs::read_to_string(&path)
        .unwrap_or_default()
        .lines()
        .all(|l| !l.contains("started"));
    record(&path, "started");
    (path, first)
}

/// Appends `{"event": event}` to the wire file at `path`.
pub fn record(path: &std::ffi::OsStr, event: &str) {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("the wire file opens");
    let _ = file.write_all(format!("{{\"event\":\"{event}\"}}\n").as_bytes());
}

/// How many of the wire file's lines are `{"event": event}`.
pub fn events(wire: &Wire, event: &str) -> usize {
    wire.lines()
        .iter()
        .filter(|l| l["event"] == json!(event))
        .count()
}

/// A fake's input: stdin read a line at a time, each line given to the
/// hook (which may note it, change it, or exit) before the server reads
/// it.
pub struct LineByLine<F> {
    hook: F,
    line: Vec<u8>,
    at: usize,
}

impl<F: FnMut(&mut Vec<u8>) -> std::io::Result<()>> LineByLine<F> {
    pub fn new(hook: F) -> Self {
        LineByLine {
            hook,
            line: Vec::new(),
            at: 0,
        }
    }
}

impl<F: FnMut(&mut Vec<u8>) -> std::io::Result<()>> Read for LineByLine<F> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.at == self.line.len() {
            self.line.clear();
            self.at = 0;
            std::io::stdin().lock().read_until(b'\n', &mut self.line)?;
            (self.hook)(&mut self.line)?;
        }
        let n = buf.len().min(self.line.len() - self.at);
        buf[..n].copy_from_slice(&self.line[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// A builder of the client behind the proxy, its notes dropped, that
/// restarts its server up to `max_restarts` times, 10 ms apart.
pub fn restarting(max_restarts: u32) -> ClientBuilder {
    builder().trace(|_| {}).restart(RestartPolicy {
        max_restarts,
        backoff: Duration::from_millis(10),
    })
}

/// The client behind the proxy: the server `command` spawns, on a client
/// built by `client` (its notes and restarts).
pub fn client_behind(client: ClientBuilder, command: Command) -> Result<Arc<Client>, String> {
    let client = client
        .spawn(command)
        .map_err(|e| format!("connecting failed: {e}"))?;
    Ok(Arc::new(client))
}

/// The client behind the proxy ([`client_behind`]), and the proxy
/// (`proxy::serve_as`) in front of that client.
pub fn proxy_in_front(
    client: ClientBuilder,
    command: Command,
) -> Result<(Arc<Client>, mcp_stdio::Server), String> {
    let client = client_behind(client, command)?;
    let proxy = mcp_stdio::proxy::serve_as(Arc::clone(&client))
        .map_err(|e| format!("serve_as failed: {e}"))?;
    Ok((client, proxy))
}

/// A caller of `proxy`'s, over memory, built by `caller`.
pub fn caller_of(proxy: &mcp_stdio::Server, caller: ClientBuilder) -> Result<Client, String> {
    let (ours, theirs) = Transport::memory();
    let serving = proxy.clone();
    thread::spawn(move || serving.serve(theirs));
    caller
        .connect(ours)
        .map_err(|e| format!("the caller could not connect: {e}"))
}

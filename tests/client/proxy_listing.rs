//! `proxy::serve_as` behind a spawned server that acknowledges the
//! proxy's listen and dies during the proxy's first listing: with a
//! restart policy the server is started again and listed, as often as
//! the policy says.

use super::*;
use std::io::{BufReader, Read};

/// The everything server, its input read a line at a time; each start
/// appends `{"event":"started"}` to the wire file, each listen it reads
/// `{"event":"listen"}` and each listing (`tools/list`, `resources/list`,
/// ...) `{"event":"listing"}`. It exits (status 9) as it reads a listing,
/// before the server sees it, once it has read a listen (whose
/// acknowledgment has gone out then: the server answers at once):
/// `exits-at-first-listing` on its first start only, `exits-at-every-
/// listing` on every start.
pub fn fake_exits_at_listing(every_time: bool) -> ! {
    let path = std::env::var_os(WIRE_ENV).expect("the wire file");
    let first = std::fs::read_to_string(&path)
        .unwrap_or_default()
        .lines()
        .all(|l| !l.contains("started"));
    record(&path, "started");
    let reader = AtListing {
        exit: every_time || first,
        listened: false,
        path: path.into(),
        line: Vec::new(),
        at: 0,
    };
    let server = everything::build();
    let _ = server.serve(Transport::new(BufReader::new(reader), std::io::stdout()));
    std::process::exit(0)
}

fn record(path: &std::ffi::OsStr, event: &str) {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("the wire file opens");
    let _ = file.write_all(format!("{{\"event\":\"{event}\"}}\n").as_bytes());
}

struct AtListing {
    exit: bool,
    listened: bool,
    path: PathBuf,
    line: Vec<u8>,
    at: usize,
}

impl Read for AtListing {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.at == self.line.len() {
            self.line.clear();
            self.at = 0;
            std::io::stdin().lock().read_until(b'\n', &mut self.line)?;
            let text = String::from_utf8_lossy(&self.line);
            if text.contains("\"subscriptions/listen\"") {
                record(self.path.as_os_str(), "listen");
                self.listened = true;
            } else if text.contains("/list\"") && self.listened {
                record(self.path.as_os_str(), "listing");
                if self.exit {
                    std::process::exit(9);
                }
            }
        }
        let n = buf.len().min(self.line.len() - self.at);
        buf[..n].copy_from_slice(&self.line[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// How many of the wire file's lines are `{"event": event}`.
fn events(wire: &Wire, event: &str) -> usize {
    wire.lines()
        .iter()
        .filter(|l| l["event"] == json!(event))
        .count()
}

/// A server that acknowledges the proxy's listen and dies as the
/// proxy's first listing reaches it, under a restart policy: `serve_as`
/// returns, the server is started again, and the proxy mirrors its
/// tools. Before the fix `serve_as` failed with the listing's error
/// ("serve_as failed: the server exited ..."), restart or not.
pub fn a_server_that_dies_during_the_first_listing_is_restarted_and_listed()
-> Result<String, String> {
    let wire = Wire::new("proxy-listing");
    let client = builder().trace(|_| {}).restart(RestartPolicy {
        max_restarts: 2,
        backoff: Duration::from_millis(10),
    });
    let command = server_command("exits-at-first-listing", Some(&wire));
    let client = Arc::new(
        client
            .spawn(command)
            .map_err(|e| format!("connecting failed: {e}"))?,
    );
    let proxy = mcp_stdio::proxy::serve_as(Arc::clone(&client))
        .map_err(|e| format!("serve_as failed: {e} (the wire: {:?})", wire.lines()))?;
    let (ours, theirs) = Transport::memory();
    let serving = proxy.clone();
    thread::spawn(move || serving.serve(theirs));
    let caller = builder()
        .connect(ours)
        .map_err(|e| format!("the caller could not connect: {e}"))?;
    let deadline = Instant::now() + WAIT;
    let tools = loop {
        let tools = caller
            .list_tools(None)
            .map_err(|e| format!("the proxy's tools/list failed: {e}"))?
            .tools;
        if !tools.is_empty() || Instant::now() > deadline {
            break tools;
        }
        thread::sleep(Duration::from_millis(20));
    };
    let started = events(&wire, "started");
    let _ = caller.close();
    let _ = client.close_shared();
    drop(proxy);
    ensure!(
        !tools.is_empty(),
        "the proxy mirrors no tool {WAIT:?} after the restart ({started} starts)"
    );
    ensure!(started == 2, "{started} starts, want 2");
    Ok(String::new())
}

/// A server that dies during every listing is started again as often as
/// the policy says, no more: `serve_as` returns (nothing mirrored), and
/// the restarts end with the policy's.
pub fn a_server_that_dies_during_every_listing_is_restarted_as_the_policy_says()
-> Result<String, String> {
    let wire = Wire::new("proxy-listings");
    let client = builder().trace(|_| {}).restart(RestartPolicy {
        max_restarts: 2,
        backoff: Duration::from_millis(10),
    });
    let command = server_command("exits-at-every-listing", Some(&wire));
    let client = Arc::new(
        client
            .spawn(command)
            .map_err(|e| format!("connecting failed: {e}"))?,
    );
    let proxy = mcp_stdio::proxy::serve_as(Arc::clone(&client));
    // Every start listened to and listed, the last one's death noted: no
    // fourth start follows (the restarts' backoff is 10 ms).
    let deadline = Instant::now() + Duration::from_secs(30);
    while events(&wire, "listing") < 3 && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    let settled = Instant::now() + Duration::from_millis(500);
    while Instant::now() < settled {
        thread::sleep(Duration::from_millis(20));
    }
    let (started, listings) = (events(&wire, "started"), events(&wire, "listing"));
    let _ = client.close_shared();
    let proxy = proxy.map_err(|e| format!("serve_as failed: {e}"))?;
    drop(proxy);
    ensure!(
        started == 3 && listings == 3,
        "{started} starts and {listings} listings, want 3 of each"
    );
    Ok(String::new())
}

/// Review review-fixes15c. Claim: without a restart policy, a server
/// that dies during the first listing (after the listen's
/// acknowledgment) holds `serve_as` (it waits for a `Resubscribed` no
/// restart sends), or returns `Ok` with nothing mirrored. False:
/// `serve_as` returns the listing's error at once, and the server is
/// started once.
pub fn without_a_restart_policy_a_death_during_the_first_listing_is_serve_as_error()
-> Result<String, String> {
    let wire = Wire::new("proxy-listing-norestart");
    let command = server_command("exits-at-every-listing", Some(&wire));
    let client = Arc::new(
        builder()
            .trace(|_| {})
            .spawn(command)
            .map_err(|e| format!("connecting failed: {e}"))?,
    );
    let started = Instant::now();
    let proxy = mcp_stdio::proxy::serve_as(Arc::clone(&client));
    let took = started.elapsed();
    let starts = events(&wire, "started");
    let _ = client.close_shared();
    ensure!(
        proxy.is_err(),
        "serve_as returned Ok without a restart policy ({starts} starts)"
    );
    ensure!(took < WAIT, "serve_as took {took:?}");
    ensure!(starts == 1, "{starts} starts, want 1");
    Ok(String::new())
}

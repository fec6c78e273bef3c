//! The client under storm: one `Client` shared by 64 threads against a
//! scripted server that answers late and out of order, stops reading, and
//! dies (right after the `server/discover` probe, on it, while listens are
//! re-sent, and in the middle of calls), with and without restart, and a
//! `close` with 64 calls in flight. Issue 29.
//!
//! `harness = false`: `main` re-executes this binary. With
//! `MCP_STDIO_STORM_SERVER` set it is the scripted server ([`server`]);
//! with `MCP_STDIO_STORM_RUN` set it runs the storm ([`storm`]) and prints
//! its figures; with neither it runs the storm twice, pinned to one CPU and
//! to two with `taskset` (unpinned, and saying so, where `taskset` is
//! missing). Everything is seeded (`MCP_STDIO_STORM_SEED`, default 29) and
//! bounded: each run has a 25 s watchdog.
//!
//! Every call carries a unique token and is judged against an exact
//! oracle: an echo returns its own token or fails with `Disconnected`; a
//! call whose reply is slower than its timeout fails with `Timeout` (never
//! a result), and how far past its timeout it returned is measured; a
//! subscription only ever sees its own URIs, each once, never ends while
//! restarts remain, and gets a final publish after the last restart.

use std::collections::{BinaryHeap, HashSet};
use std::io::{BufRead, Write};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use mcp_stdio::types::SubscriptionFilter;
use mcp_stdio::{
    Client, ClientBuilder, Error, RequestOptions, RestartPolicy, SubscriptionEnd, SubscriptionEvent,
};
use serde_json::{Value, json};

const SERVER_ENV: &str = "MCP_STDIO_STORM_SERVER";
const COUNTER_ENV: &str = "MCP_STDIO_STORM_COUNTER";
const RUN_ENV: &str = "MCP_STDIO_STORM_RUN";
const SEED_ENV: &str = "MCP_STDIO_STORM_SEED";
const THREADS: usize = 64;
const SUBSCRIPTIONS: usize = 4;
/// How long one event (a restart, an answer, a final publish) may take.
const WAIT: Duration = Duration::from_secs(10);
/// What a fast echo may take before its (long) timeout judges it wrong.
const FAST_TIMEOUT: Duration = Duration::from_secs(5);
/// The worst tolerated return past a call's timeout.
const OVERSHOOT_LIMIT: Duration = Duration::from_millis(1000);

fn main() {
    if let Ok(plan) = std::env::var(SERVER_ENV) {
        server(&plan);
    }
    if std::env::var_os(RUN_ENV).is_some() {
        thread::spawn(|| {
            thread::sleep(Duration::from_secs(25));
            println!("FAILED storm: did not finish within 25 s");
            std::process::exit(1);
        });
        match storm() {
            Ok(figures) => {
                println!("ok storm ({figures})");
                std::process::exit(0);
            }
            Err(reason) => {
                println!("FAILED storm: {reason}");
                std::process::exit(1);
            }
        }
    }
    let exe = std::env::current_exe().expect("the test's own path");
    let cpus = thread::available_parallelism().map_or(1, |n| n.get());
    let mut failed = 0;
    for set in ["0", "0,1"] {
        if set == "0,1" && cpus < 2 {
            println!("skipped storm on 2 CPUs: this machine has {cpus}");
            continue;
        }
        let mut command = Command::new("taskset");
        command.args(["-c", set]).arg(&exe);
        let output = match command.env(RUN_ENV, set).output() {
            Ok(output) => output,
            Err(e) => {
                println!("taskset could not run ({e}): the storm runs unpinned");
                Command::new(&exe)
                    .env(RUN_ENV, set)
                    .output()
                    .expect("the test re-executes itself")
            }
        };
        let stdout = String::from_utf8_lossy(&output.stdout);
        print!("CPUs {set}: {stdout}");
        if !output.status.success() {
            failed += 1;
            let stderr = String::from_utf8_lossy(&output.stderr);
            let tail: Vec<&str> = stderr.lines().rev().take(10).collect();
            println!("  stderr ended with: {tail:?}");
        }
    }
    println!("{} failed", failed);
    std::process::exit(i32::from(failed > 0));
}

// ---------------------------------------------------------------------------
// The scripted server
// ---------------------------------------------------------------------------

/// The scripted server. Its generation (how many servers this run started
/// before it) comes from the counter file; the plan's letter for it says
/// how it behaves: `N` normal, `P` exits right after answering
/// `server/discover`, `B` exits on `server/discover` without answering,
/// `L` exits right after acknowledging its first `subscriptions/listen`.
///
/// Tools: `echo {token, delay_ms}` answers `token` after `delay_ms` (late
/// and out of order; a cancelled echo with an even id is still answered);
/// `publish {k, token}` sends `notifications/resources/updated` with URI
/// `storm://k/token` to every listen on `storm://k`, then answers; `stall
/// {ms}` answers, then stops reading for `ms`; `die` exits at once.
fn server(plan: &str) -> ! {
    let counter = std::env::var(COUNTER_ENV).expect("the counter file");
    let generation: usize = std::fs::read_to_string(&counter)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    std::fs::write(&counter, (generation + 1).to_string()).expect("the counter is written");
    let mode = plan.as_bytes().get(generation).copied().unwrap_or(b'N');
    let out = Arc::new(Mutex::new(std::io::stdout()));
    let write = {
        let out = Arc::clone(&out);
        move |msg: &Value| {
            let mut line = serde_json::to_vec(msg).expect("a Value encodes");
            line.push(b'\n');
            let mut out = out.lock().unwrap_or_else(|e| e.into_inner());
            if out.write_all(&line).and_then(|()| out.flush()).is_err() {
                std::process::exit(0);
            }
        }
    };
    let timer = timer(write.clone());
    let cancelled: Arc<Mutex<HashSet<String>>> = Arc::default();
    let mut listens: Vec<(Value, String)> = Vec::new();
    let mut stdin = std::io::stdin().lock();
    let mut line = String::new();
    loop {
        line.clear();
        if matches!(stdin.read_line(&mut line), Ok(0) | Err(_)) {
            std::process::exit(0);
        }
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let method = msg["method"].as_str().unwrap_or_default();
        let id = msg["id"].clone();
        if method == "notifications/cancelled" {
            let target = msg["params"]["requestId"].clone();
            listens.retain(|(listen, _)| *listen != target);
            lock(&cancelled).insert(target.to_string());
            continue;
        }
        if id.is_null() {
            continue;
        }
        let args = &msg["params"]["arguments"];
        match (method, msg["params"]["name"].as_str()) {
            ("server/discover", _) => {
                if mode == b'B' {
                    std::process::exit(4);
                }
                let result = json!({
                    "resultType": "complete",
                    "supportedVersions": ["2026-07-28"],
                    "capabilities": { "tools": {}, "resources": { "subscribe": true } },
                    "instructions": format!("gen {generation}"),
                });
                write(&json!({ "jsonrpc": "2.0", "id": id, "result": result }));
                if mode == b'P' {
                    std::process::exit(5);
                }
            }
            ("subscriptions/listen", _) => {
                let filter = msg["params"]["notifications"].clone();
                let prefix = filter["resourceSubscriptions"][0]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                let meta = json!({ "io.modelcontextprotocol/subscriptionId": id });
                write(&json!({
                    "jsonrpc": "2.0",
                    "method": "notifications/subscriptions/acknowledged",
                    "params": { "_meta": meta, "notifications": filter }
                }));
                listens.push((id, prefix));
                if mode == b'L' {
                    std::process::exit(6);
                }
            }
            ("tools/call", Some("echo")) => {
                let token = args["token"].as_str().unwrap_or_default();
                let delay = Duration::from_millis(args["delay_ms"].as_u64().unwrap_or(0));
                let reply = json!({ "jsonrpc": "2.0", "id": id, "result": text(token) });
                let keep = Arc::clone(&cancelled);
                let key = id.to_string();
                let answer_anyway = id.as_i64().is_some_and(|n| n % 2 == 0);
                let _ = timer.send((
                    Instant::now() + delay,
                    reply,
                    Box::new(move || answer_anyway || !lock(&keep).remove(&key)),
                ));
            }
            ("tools/call", Some("publish")) => {
                let k = args["k"].as_u64().unwrap_or(0);
                let token = args["token"].as_str().unwrap_or_default();
                let wanted = format!("storm://{k}");
                for (listen, prefix) in &listens {
                    if *prefix == wanted {
                        let meta = json!({ "io.modelcontextprotocol/subscriptionId": listen });
                        write(&json!({
                            "jsonrpc": "2.0",
                            "method": "notifications/resources/updated",
                            "params": { "_meta": meta, "uri": format!("{wanted}/{token}") }
                        }));
                    }
                }
                write(&json!({ "jsonrpc": "2.0", "id": id, "result": text("published") }));
            }
            ("tools/call", Some("stall")) => {
                write(&json!({ "jsonrpc": "2.0", "id": id, "result": text("stalled") }));
                thread::sleep(Duration::from_millis(args["ms"].as_u64().unwrap_or(0)));
            }
            ("tools/call", Some("die")) => std::process::exit(3),
            _ => {
                let error = json!({ "code": -32601, "message": "Method not found" });
                write(&json!({ "jsonrpc": "2.0", "id": id, "error": error }));
            }
        }
    }
}

/// A reply the timer sends at its time, if its check still says so.
type Timed = (Instant, Value, Box<dyn FnOnce() -> bool + Send>);

/// The server's timer thread: sends each reply at its time, in time order.
fn timer(write: impl Fn(&Value) + Send + 'static) -> crossbeam_channel::Sender<Timed> {
    struct Entry(Instant, u64, Value, Box<dyn FnOnce() -> bool + Send>);
    impl PartialEq for Entry {
        fn eq(&self, other: &Self) -> bool {
            (self.0, self.1) == (other.0, other.1)
        }
    }
    impl Eq for Entry {}
    impl PartialOrd for Entry {
        fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
            Some(self.cmp(other))
        }
    }
    impl Ord for Entry {
        fn cmp(&self, other: &Self) -> std::cmp::Ordering {
            (other.0, other.1).cmp(&(self.0, self.1))
        }
    }
    let (tx, rx) = crossbeam_channel::unbounded::<Timed>();
    thread::spawn(move || {
        let mut heap = BinaryHeap::new();
        let mut seq = 0;
        loop {
            while heap.peek().is_some_and(|e: &Entry| e.0 <= Instant::now()) {
                let Entry(_, _, reply, still) = heap.pop().expect("peeked");
                if still() {
                    write(&reply);
                }
            }
            let next = heap.peek().map(|e: &Entry| e.0);
            let got = match next {
                Some(at) => rx.recv_deadline(at).map_err(|e| e.is_disconnected()),
                None => rx.recv().map_err(|_| true),
            };
            match got {
                Ok((at, reply, still)) => {
                    seq += 1;
                    heap.push(Entry(at, seq, reply, still));
                }
                Err(true) => return,
                Err(false) => {}
            }
        }
    });
    tx
}

fn text(token: &str) -> Value {
    json!({ "resultType": "complete", "content": [{ "type": "text", "text": token }] })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

// ---------------------------------------------------------------------------
// The storm
// ---------------------------------------------------------------------------

/// A seeded xorshift generator: the same seed, the same storm.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// What the callers saw, summed over every thread.
#[derive(Default)]
struct Tally {
    judged: AtomicU64,
    ok: AtomicU64,
    timeouts: AtomicU64,
    /// Slow echoes answered with their result: the waiter looked only
    /// after the reply had come (it was not scheduled in time, on a loaded
    /// CPU), and the reader had routed it before any cancel.
    late_results: AtomicU64,
    disconnected: AtomicU64,
    cancels: AtomicU64,
    worst_overshoot_us: AtomicU64,
    wrong: Mutex<Vec<String>>,
}

impl Tally {
    fn wrong(&self, what: String) {
        let mut wrong = lock(&self.wrong);
        if wrong.len() < 5 {
            wrong.push(what);
        }
    }
}

/// One run: the restart storm, the storm without restart, and `close`
/// with calls in flight. Returns the figures.
fn storm() -> Result<String, String> {
    let seed: u64 = std::env::var(SEED_ENV)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(29);
    let tally = Arc::new(Tally::default());
    let started = Instant::now();
    // The first server dies right after the probe; then normal servers the
    // storm kills, and servers that die after the probe, on it, and while
    // the listens are re-sent.
    let plan = "PNPBPNLPNPN";
    let restarts = restart_storm(plan, seed, &tally)?;
    no_restart_storm(seed ^ 0x9e37, &tally)?;
    close_in_flight(&tally)?;
    let wrong = lock(&tally.wrong).clone();
    if !wrong.is_empty() {
        return Err(format!("wrong outcomes: {wrong:?}"));
    }
    // Timeouts that work make late results the exception: one per call
    // whose waiter was not scheduled for the whole of its reply's delay.
    let (late, timeouts) = (
        tally.late_results.load(Ordering::Relaxed),
        tally.timeouts.load(Ordering::Relaxed),
    );
    if late * 4 > timeouts {
        return Err(format!(
            "{late} slow echoes returned their result past the timeout, against {timeouts} timeouts: the timeouts do not work"
        ));
    }
    let overshoot = Duration::from_micros(tally.worst_overshoot_us.load(Ordering::Relaxed));
    if overshoot > OVERSHOOT_LIMIT {
        return Err(format!(
            "a call returned {overshoot:?} past its timeout (limit {OVERSHOOT_LIMIT:?})"
        ));
    }
    Ok(format!(
        "seed {seed}: {} calls judged ({} results, {} timeouts, {late} results past a timeout, {} disconnected), {} cancels, worst overshoot past a timeout {:.1} ms, {restarts} restarts seen, {:.1} s",
        tally.judged.load(Ordering::Relaxed),
        tally.ok.load(Ordering::Relaxed),
        tally.timeouts.load(Ordering::Relaxed),
        tally.disconnected.load(Ordering::Relaxed),
        tally.cancels.load(Ordering::Relaxed),
        overshoot.as_secs_f64() * 1000.0,
        started.elapsed().as_secs_f64()
    ))
}

/// A client on the scripted server with `plan`, and the counter file.
fn client(plan: &str, restart: Option<u32>) -> Result<(Client, Counter), String> {
    let counter = Counter::new();
    let mut command = Command::new(std::env::current_exe().map_err(|e| e.to_string())?);
    command
        .env(SERVER_ENV, plan)
        .env(COUNTER_ENV, &counter.0)
        .env_remove(RUN_ENV);
    let mut builder = ClientBuilder::default()
        .request_timeout(WAIT)
        .probe_timeout(WAIT)
        .close_grace(Duration::from_secs(1))
        // The notes of a storm (restarts, deaths) are expected.
        .trace(|_| {});
    if let Some(max_restarts) = restart {
        builder = builder.restart(RestartPolicy {
            max_restarts,
            backoff: Duration::from_millis(1),
        });
    }
    let client = builder
        .spawn(command)
        .map_err(|e| format!("spawn failed: {e}"))?;
    Ok((client, counter))
}

/// The file the servers of one client count their generations in.
struct Counter(std::path::PathBuf);

impl Counter {
    fn new() -> Counter {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "mcp-stdio-storm-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_file(&path);
        Counter(path)
    }
}

impl Drop for Counter {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The generation of the server the client speaks to now.
fn generation(client: &Client) -> Option<usize> {
    client.instructions()?.strip_prefix("gen ")?.parse().ok()
}

/// The 64 callers: each loops over a seeded mix of calls until `stop`.
fn callers(
    client: &Arc<Client>,
    seed: u64,
    tally: &Arc<Tally>,
    stop: &Arc<AtomicBool>,
) -> Vec<thread::JoinHandle<()>> {
    (0..THREADS)
        .map(|t| {
            let (client, tally, stop) = (Arc::clone(client), Arc::clone(tally), Arc::clone(stop));
            thread::spawn(move || {
                let mut rng = Rng(seed.wrapping_mul(6364136223846793005) ^ (t as u64 + 1) << 20);
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    call(&client, &mut rng, &format!("t{t}-{n}"), &tally);
                }
            })
        })
        .collect()
}

/// One call of the mix, judged.
fn call(client: &Client, rng: &mut Rng, token: &str, tally: &Tally) {
    let roll = rng.below(100);
    let pad = "x".repeat(rng.below(2048) as usize);
    let (tool, args, timeout) = match roll {
        // A slow echo with a short timeout: it must time out.
        0..15 => {
            let timeout = Duration::from_millis(10 + rng.below(20));
            let args = json!({ "token": token, "delay_ms": 60 + rng.below(60), "pad": pad });
            ("echo", args, timeout)
        }
        // A cancelled echo: nothing to judge, a late reply to drop.
        15..25 => {
            let args = json!({ "token": token, "delay_ms": rng.below(40) });
            let pending = call_params("echo", args).and_then(|params| {
                client.start_request("tools/call", params, RequestOptions::new())
            });
            if let Ok(pending) = pending {
                thread::sleep(Duration::from_millis(rng.below(20)));
                pending.cancel(Some("storm"));
                tally.cancels.fetch_add(1, Ordering::Relaxed);
            }
            return;
        }
        25..35 => {
            let k = rng.below(SUBSCRIPTIONS as u64);
            ("publish", json!({ "k": k, "token": token }), FAST_TIMEOUT)
        }
        35..36 => ("stall", json!({ "ms": 100 + rng.below(100) }), FAST_TIMEOUT),
        _ => {
            let args = json!({ "token": token, "delay_ms": rng.below(4), "pad": pad });
            ("echo", args, FAST_TIMEOUT)
        }
    };
    let delay = Duration::from_millis(args["delay_ms"].as_u64().unwrap_or(0));
    let want = match tool {
        "echo" => token,
        "publish" => "published",
        _ => "stalled",
    };
    let began = Instant::now();
    let outcome = call_params(tool, args)
        .and_then(|params| {
            client.start_request("tools/call", params, RequestOptions::new().timeout(timeout))
        })
        .and_then(|pending| pending.wait());
    let took = began.elapsed();
    tally.judged.fetch_add(1, Ordering::Relaxed);
    let slow = timeout < FAST_TIMEOUT;
    match outcome {
        Ok(raw) => {
            tally.ok.fetch_add(1, Ordering::Relaxed);
            let got: Value = serde_json::from_str(raw.get()).unwrap_or_default();
            let text = got["content"][0]["text"].as_str().unwrap_or_default();
            // The reply came after the timeout; a waiter that looks only
            // then (not scheduled in time) finds it routed to it, and takes
            // it (`call::tests::a_reply_that_arrives_as_the_wait_times_out_is_taken_not_cancelled`).
            // One that returns a result before the reply could have come
            // ignored its timeout.
            if slow && took < delay {
                tally.wrong(format!(
                    "{token}: a result after {took:?}, past its timeout {timeout:?}, before its reply could come ({delay:?})"
                ));
            } else if slow {
                tally.late_results.fetch_add(1, Ordering::Relaxed);
            } else if text != want {
                tally.wrong(format!("{token}: got {text:?}, want {want:?}"));
            }
        }
        Err(Error::Timeout) => {
            tally.timeouts.fetch_add(1, Ordering::Relaxed);
            let over = took.saturating_sub(timeout).as_micros() as u64;
            tally.worst_overshoot_us.fetch_max(over, Ordering::Relaxed);
            if !slow {
                tally.wrong(format!("{token}: {tool} timed out after {took:?}"));
            }
        }
        Err(Error::Disconnected) => {
            tally.disconnected.fetch_add(1, Ordering::Relaxed);
            // The server is restarting: a caller retries after a pause, as
            // an application would, instead of spinning.
            thread::sleep(Duration::from_millis(5));
        }
        Err(e) => tally.wrong(format!("{token}: {tool} failed: {e}")),
    }
}

fn call_params(tool: &str, args: Value) -> Result<Value, Error> {
    Ok(json!({ "name": tool, "arguments": args }))
}

/// What a subscriber saw.
struct Seen {
    events: usize,
    resubscribed: usize,
    end: Option<SubscriptionEnd>,
}

/// A subscriber on `storm://k`: opens its listen (again, while the server
/// restarts), then checks every event until `stop`, and waits for the
/// final publish when `final_token` is set.
fn subscriber(
    client: Arc<Client>,
    k: usize,
    tally: Arc<Tally>,
    stop: Arc<AtomicBool>,
    opened: crossbeam_channel::Sender<()>,
) -> thread::JoinHandle<Seen> {
    thread::spawn(move || {
        let filter = SubscriptionFilter {
            resource_subscriptions: Some(vec![format!("storm://{k}")]),
            ..SubscriptionFilter::default()
        };
        let deadline = Instant::now() + WAIT;
        let mut sub = loop {
            match client.listen(filter.clone()) {
                Ok(sub) => break sub,
                Err(Error::Disconnected) if Instant::now() < deadline => {
                    thread::sleep(Duration::from_millis(5));
                }
                Err(e) => {
                    tally.wrong(format!("subscriber {k}: listen failed: {e}"));
                    return Seen {
                        events: 0,
                        resubscribed: 0,
                        end: None,
                    };
                }
            }
        };
        let _ = opened.send(());
        let prefix = format!("storm://{k}/");
        let mut tokens = HashSet::new();
        let mut seen = Seen {
            events: 0,
            resubscribed: 0,
            end: None,
        };
        let mut final_deadline = None;
        loop {
            if stop.load(Ordering::Relaxed) && final_deadline.is_none() {
                final_deadline = Some(Instant::now() + WAIT);
            }
            if final_deadline.is_some_and(|at| Instant::now() > at) {
                tally.wrong(format!("subscriber {k}: no final publish within {WAIT:?}"));
                break;
            }
            match sub.recv_timeout(Duration::from_millis(20)) {
                Ok(Some(SubscriptionEvent::ResourceUpdated { uri })) => {
                    seen.events += 1;
                    let Some(token) = uri.strip_prefix(&prefix) else {
                        tally.wrong(format!("subscriber {k} got {uri}"));
                        continue;
                    };
                    if !tokens.insert(token.to_owned()) {
                        tally.wrong(format!("subscriber {k} got {uri} twice"));
                    }
                    if token.starts_with("final") {
                        break;
                    }
                }
                Ok(Some(SubscriptionEvent::Resubscribed { .. })) => seen.resubscribed += 1,
                Ok(Some(other)) => tally.wrong(format!("subscriber {k} got {other:?}")),
                Ok(None) => {}
                Err(end) => {
                    seen.end = Some(end);
                    break;
                }
            }
        }
        seen
    })
}

/// The restart storm: the servers of `plan` die one after the other (the
/// normal ones killed by the storm with `die`, after a while of calls);
/// the client must come back after every death, with every subscription.
/// Returns the restarts seen.
fn restart_storm(plan: &str, seed: u64, tally: &Arc<Tally>) -> Result<usize, String> {
    let last = plan.len() - 1;
    let (client, _counter) = client(plan, Some(last as u32))?;
    let client = Arc::new(client);
    let stop = Arc::new(AtomicBool::new(false));
    let (opened_tx, opened) = crossbeam_channel::unbounded();
    let subs: Vec<_> = (0..SUBSCRIPTIONS)
        .map(|k| {
            let args = (Arc::clone(tally), Arc::clone(&stop), opened_tx.clone());
            subscriber(Arc::clone(&client), k, args.0, args.1, args.2)
        })
        .collect();
    for _ in 0..SUBSCRIPTIONS {
        opened
            .recv_timeout(WAIT)
            .map_err(|_| "the subscriptions did not open: the client is dead".to_owned())?;
    }
    let callers_stop = Arc::new(AtomicBool::new(false));
    let callers = callers(&client, seed, tally, &callers_stop);
    let mut restarts = 0;
    let outcome = (|| loop {
        // Wait until a server answers; then let the storm run on it, and
        // kill it unless it is the last.
        let began = Instant::now();
        let current = loop {
            let answered = client.request_with(
                "tools/call",
                json!({ "name": "echo", "arguments": { "token": "probe-alive" } }),
                RequestOptions::new().timeout(Duration::from_secs(2)),
            );
            if let (Ok(_), Some(current)) = (&answered, generation(&client)) {
                break current;
            }
            if began.elapsed() > WAIT {
                return Err(format!(
                    "the client is dead: nothing answered for {WAIT:?} after server {:?} of {last} (restarts left); last: {answered:?}",
                    generation(&client)
                ));
            }
            thread::sleep(Duration::from_millis(5));
        };
        restarts = current;
        thread::sleep(Duration::from_millis(500));
        if current >= last {
            return Ok(());
        }
        let _ = client.request("tools/call", json!({ "name": "die", "arguments": {} }));
    })();
    callers_stop.store(true, Ordering::Relaxed);
    for caller in callers {
        let _ = caller.join();
    }
    outcome?;
    // The final publish: every subscription must be back on the last server.
    stop.store(true, Ordering::Relaxed);
    let finished = Instant::now();
    let mut seen = Vec::new();
    for (k, sub) in subs.into_iter().enumerate() {
        while !sub.is_finished() && finished.elapsed() < WAIT {
            let token = format!("final-{k}-{}", finished.elapsed().as_micros());
            let _ = client.request(
                "tools/call",
                json!({ "name": "publish", "arguments": { "k": k, "token": token } }),
            );
            thread::sleep(Duration::from_millis(20));
        }
        seen.push(sub.join().map_err(|_| format!("subscriber {k} panicked"))?);
    }
    for (k, s) in seen.iter().enumerate() {
        if let Some(end) = s.end {
            return Err(format!(
                "subscription {k} ended {end:?} with restarts left ({} events, {} resubscribed)",
                s.events, s.resubscribed
            ));
        }
        if s.resubscribed == 0 {
            return Err(format!("subscription {k} was never resubscribed"));
        }
    }
    Arc::try_unwrap(client)
        .map_err(|_| "the client is still shared".to_owned())?
        .close()
        .map_err(|e| format!("close failed: {e}"))?;
    Ok(restarts)
}

/// Without restart: a server killed mid-storm fails every call at once
/// and ends every subscription `Disconnected`; the client stays dead.
fn no_restart_storm(seed: u64, tally: &Arc<Tally>) -> Result<(), String> {
    let (client, _counter) = client("N", None)?;
    let client = Arc::new(client);
    let stop = Arc::new(AtomicBool::new(false));
    let (opened_tx, opened) = crossbeam_channel::unbounded();
    let subs: Vec<_> = (0..SUBSCRIPTIONS)
        .map(|k| {
            let args = (Arc::clone(tally), Arc::clone(&stop), opened_tx.clone());
            subscriber(Arc::clone(&client), k, args.0, args.1, args.2)
        })
        .collect();
    for _ in 0..SUBSCRIPTIONS {
        opened
            .recv_timeout(WAIT)
            .map_err(|_| "without restart: the subscriptions did not open".to_owned())?;
    }
    let callers = callers(&client, seed, tally, &stop);
    thread::sleep(Duration::from_millis(300));
    let _ = client.request("tools/call", json!({ "name": "die", "arguments": {} }));
    thread::sleep(Duration::from_millis(100));
    let began = Instant::now();
    let after = client.request(
        "tools/call",
        json!({ "name": "echo", "arguments": { "token": "dead" } }),
    );
    if !matches!(after, Err(Error::Disconnected)) || began.elapsed() > Duration::from_millis(100) {
        return Err(format!(
            "without restart: a call after the death: {after:?} after {:?}",
            began.elapsed()
        ));
    }
    stop.store(true, Ordering::Relaxed);
    for caller in callers {
        let _ = caller.join();
    }
    for (k, sub) in subs.into_iter().enumerate() {
        let seen = sub.join().map_err(|_| format!("subscriber {k} panicked"))?;
        if seen.end != Some(SubscriptionEnd::Disconnected) {
            return Err(format!(
                "without restart: subscription {k} ended {:?}, want Disconnected",
                seen.end
            ));
        }
    }
    // The wrong-outcome list holds the subscribers' missing final publish:
    // expected here, so it is cleared of those.
    lock(&tally.wrong).retain(|w| !w.contains("no final publish"));
    Ok(())
}

/// `close` with 64 calls in flight: it returns within the close grace and
/// every call fails `Disconnected` at once.
fn close_in_flight(tally: &Arc<Tally>) -> Result<(), String> {
    let (client, _counter) = client("N", None)?;
    let client = Arc::new(client);
    let (started_tx, started) = crossbeam_channel::unbounded();
    let (closed_tx, closed) = crossbeam_channel::unbounded::<Instant>();
    let waiters: Vec<_> = (0..THREADS)
        .map(|t| {
            let (client, started_tx, closed) =
                (Arc::clone(&client), started_tx.clone(), closed.clone());
            let tally = Arc::clone(tally);
            thread::spawn(move || {
                let token = format!("close-{t}");
                let params =
                    json!({ "name": "echo", "arguments": { "token": token, "delay_ms": 60_000 } });
                let pending = client.start_request("tools/call", params, RequestOptions::new());
                drop(client);
                let _ = started_tx.send(());
                let outcome = pending.and_then(|p| p.wait());
                tally.judged.fetch_add(1, Ordering::Relaxed);
                let at = closed.recv_timeout(WAIT).ok();
                match (outcome, at) {
                    (Err(Error::Disconnected), Some(at))
                        if at.elapsed() < Duration::from_secs(1) =>
                    {
                        tally.disconnected.fetch_add(1, Ordering::Relaxed);
                    }
                    (outcome, at) => tally.wrong(format!(
                        "{token}: during close: {outcome:?}, {:?} after close returned",
                        at.map(|at| at.elapsed())
                    )),
                }
            })
        })
        .collect();
    for _ in 0..THREADS {
        started
            .recv_timeout(WAIT)
            .map_err(|_| "close: the calls did not start".to_owned())?;
    }
    let mut client = client;
    let began = Instant::now();
    let client = loop {
        match Arc::try_unwrap(client) {
            Ok(client) => break client,
            Err(shared) if began.elapsed() < WAIT => {
                client = shared;
                thread::yield_now();
            }
            Err(_) => return Err("close: the client is still shared".into()),
        }
    };
    let began = Instant::now();
    client.close().map_err(|e| format!("close failed: {e}"))?;
    let took = began.elapsed();
    for _ in 0..THREADS {
        let _ = closed_tx.send(Instant::now());
    }
    for waiter in waiters {
        let _ = waiter.join();
    }
    if took > Duration::from_secs(2) {
        return Err(format!("close with calls in flight took {took:?}"));
    }
    Ok(())
}

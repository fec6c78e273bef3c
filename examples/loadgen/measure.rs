//! The measurements of one server command, each on fresh processes:
//!
//! - startup: spawn → reply to `server/discover`, then the idle peak RSS,
//!   then the exit after stdin EOF (one process per sample);
//! - per payload size, on one process: a warm-up, sequential round trips
//!   (one call at a time), pipelined calls (a window of calls in flight,
//!   CPU time and peak RSS over them), and finally a burst of calls followed
//!   at once by stdin EOF, every one of which must still be answered;
//! - memory kept: the resident set once idle after `server/discover`, and
//!   again a second after a burst of pipelined calls of mixed sizes up to
//!   3 MiB ended: what a long-running server keeps of its worst minute.
//!
//! Every reply is checked (id and exact text); the first wrong or missing
//! reply ends the measurement with an error.

use std::io::Write;
use std::thread;
use std::time::{Duration, Instant};

use crate::process::{Server, ServerCommand};
use crate::procfs;
use crate::wire::{self, Payload, Reply};

/// How much to measure.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Processes started for the startup and exit figures.
    pub startups: usize,
    /// Payload sizes, in bytes of echoed text.
    pub sizes: Vec<usize>,
    /// Sequential calls before the timed ones.
    pub warmup: usize,
    /// Timed sequential calls...
    pub sequential: usize,
    /// ...capped at this many payload bytes.
    pub sequential_bytes: usize,
    /// Pipelined calls...
    pub pipelined: usize,
    /// ...capped at this many payload bytes.
    pub pipelined_bytes: usize,
    /// Calls in flight during the pipelined phase.
    pub window: usize,
    /// Calls written just before stdin is closed (capped at an eighth of
    /// `pipelined_bytes`).
    pub at_eof: usize,
    /// The least number of calls of any phase, whatever the caps say.
    pub min_calls: usize,
    /// Calls of the memory-kept burst...
    pub burst: usize,
    /// ...in sizes from 1 KiB up to this, log-spaced.
    pub burst_largest: usize,
    /// Any one server process is killed after this long.
    pub deadline: Duration,
}

/// The calls of each phase at one payload size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counts {
    pub warmup: usize,
    pub sequential: usize,
    pub pipelined: usize,
    pub at_eof: usize,
}

impl Plan {
    /// The benchmark: ≥ 5,000 sequential and 100,000 pipelined calls at
    /// small payloads, fewer at large ones (capped by bytes moved).
    pub fn full() -> Plan {
        Plan {
            startups: 20,
            sizes: vec![32, 1024, 64 * 1024, 1024 * 1024],
            warmup: 1000,
            sequential: 5000,
            sequential_bytes: 128 << 20,
            pipelined: 100_000,
            pipelined_bytes: 512 << 20,
            window: 64,
            at_eof: 256,
            min_calls: 64,
            burst: 400,
            burst_largest: 3 << 20,
            deadline: Duration::from_secs(300),
        }
    }

    /// A smoke run: every phase and figure, tiny counts. The figures mean
    /// nothing; that every reply is right does.
    pub fn quick() -> Plan {
        Plan {
            startups: 3,
            sizes: vec![32, 1024, 64 * 1024, 1024 * 1024],
            warmup: 10,
            sequential: 100,
            sequential_bytes: 1 << 20,
            pipelined: 1000,
            pipelined_bytes: 4 << 20,
            window: 64,
            at_eof: 64,
            min_calls: 4,
            burst: 40,
            burst_largest: 256 << 10,
            deadline: Duration::from_secs(60),
        }
    }

    pub fn counts(&self, size: usize) -> Counts {
        let capped =
            |calls: usize, bytes: usize| calls.min((bytes / size.max(1)).max(self.min_calls));
        let sequential = capped(self.sequential, self.sequential_bytes);
        Counts {
            warmup: (self.warmup * sequential / self.sequential.max(1)).max(1),
            sequential,
            pipelined: capped(self.pipelined, self.pipelined_bytes),
            at_eof: capped(self.at_eof, self.pipelined_bytes / 8),
        }
    }

    /// How many replies a complete measurement checks.
    pub fn replies(&self) -> u64 {
        let calls: usize = self
            .sizes
            .iter()
            .map(|&size| {
                let c = self.counts(size);
                c.warmup + c.sequential + c.pipelined + c.at_eof
            })
            .sum();
        // Each size and the burst start with a discover.
        (self.startups + self.sizes.len() + calls + 1 + self.burst) as u64
    }

    /// The payload sizes of the burst: [`BURST_SIZES`] sizes from 1 KiB to
    /// `burst_largest`, evenly spaced on a log scale.
    fn burst_sizes(&self) -> Vec<usize> {
        let (low, high) = (1024.0_f64, self.burst_largest.max(1024) as f64);
        (0..BURST_SIZES)
            .map(|i| (low * (high / low).powf(i as f64 / (BURST_SIZES - 1) as f64)) as usize)
            .collect()
    }
}

/// How many payload sizes the burst cycles through.
const BURST_SIZES: usize = 20;

/// How long a server is left idle before its resident set is read: its
/// own idle work (trimming the heap, say) has happened by then.
const SETTLE: Duration = Duration::from_secs(1);

/// One measured figure.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// A stable name (the `figure` of the JSON output).
    pub name: &'static str,
    /// The payload size it was measured at, if it depends on one.
    pub payload: Option<usize>,
    pub unit: &'static str,
    pub value: f64,
}

/// All figures of one server command, and how many replies were checked.
#[derive(Clone, Debug, Default)]
pub struct Measurement {
    pub figures: Vec<Figure>,
    pub replies_checked: u64,
}

impl Measurement {
    fn push(&mut self, name: &'static str, payload: Option<usize>, unit: &'static str, value: f64) {
        self.figures.push(Figure {
            name,
            payload,
            unit,
            value,
        });
    }
}

/// Measures one server command according to `plan`.
pub fn measure(command: &ServerCommand, plan: &Plan) -> Result<Measurement, String> {
    let mut m = Measurement::default();
    startup_and_exit(command, plan, &mut m).map_err(|e| format!("startup: {e}"))?;
    for &size in &plan.sizes {
        at_size(command, plan, size, &mut m).map_err(|e| format!("payload {size} B: {e}"))?;
    }
    memory_kept(command, plan, &mut m).map_err(|e| format!("burst: {e}"))?;
    Ok(m)
}

/// The resident set idle before and a second after `plan.burst` pipelined
/// calls whose sizes cycle through [`Plan::burst_sizes`].
fn memory_kept(command: &ServerCommand, plan: &Plan, m: &mut Measurement) -> Result<(), String> {
    let payloads: Vec<Payload> = plan.burst_sizes().into_iter().map(Payload::new).collect();
    let mut server = Server::spawn(command, plan.deadline)?;
    let id = server.ids(1).start;
    discover(&mut server, id)?;
    m.replies_checked += 1;
    thread::sleep(SETTLE);
    m.push(
        "rss_before_burst",
        None,
        "KiB",
        procfs::rss_kib(server.pid())? as f64,
    );
    let first = server.ids(0).start;
    let payload_of = |id: u64| &payloads[(id - first) as usize % payloads.len()];
    pipelined(&mut server, &payload_of, plan.burst, plan.window)?;
    m.replies_checked += plan.burst as u64;
    thread::sleep(SETTLE);
    m.push(
        "rss_after_burst",
        None,
        "KiB",
        procfs::rss_kib(server.pid())? as f64,
    );
    server.close_input();
    server.wait_exit()
}

/// Startup (spawn → discover reply), idle peak RSS and exit after stdin EOF,
/// each the median over `plan.startups` processes.
fn startup_and_exit(
    command: &ServerCommand,
    plan: &Plan,
    m: &mut Measurement,
) -> Result<(), String> {
    let (mut startups, mut exits, mut rss) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..plan.startups.max(1) {
        let started = Instant::now();
        let mut server = Server::spawn(command, plan.deadline)?;
        let id = server.ids(1).start;
        discover(&mut server, id)?;
        startups.push(started.elapsed());
        m.replies_checked += 1;
        rss.push(procfs::peak_rss_kib(server.pid())? as f64);

        let closed = Instant::now();
        server.close_input();
        if let Some(line) = server.output.next()? {
            return Err(format!(
                "unexpected output when idle: {}",
                String::from_utf8_lossy(line)
            ));
        }
        server.wait_exit()?;
        exits.push(closed.elapsed());
    }
    m.push(
        "startup",
        None,
        "ms",
        millis(median_duration(&mut startups)),
    );
    m.push("exit_idle", None, "ms", millis(median_duration(&mut exits)));
    m.push("rss_idle", None, "KiB", median(&mut rss));
    Ok(())
}

/// Every per-size figure, on one fresh process.
fn at_size(
    command: &ServerCommand,
    plan: &Plan,
    size: usize,
    m: &mut Measurement,
) -> Result<(), String> {
    let counts = plan.counts(size);
    let payload = Payload::new(size);
    let payload_size = Some(payload.size());
    let mut server = Server::spawn(command, plan.deadline)?;
    let id = server.ids(1).start;
    discover(&mut server, id)?;
    m.replies_checked += 1;

    sequential(&mut server, &payload, counts.warmup)?;
    let mut latencies = sequential(&mut server, &payload, counts.sequential)?;
    m.replies_checked += (counts.warmup + counts.sequential) as u64;
    latencies.sort();
    let p50 = percentile(&latencies, 0.50);
    m.push("latency_p50", payload_size, "us", micros(p50));
    m.push(
        "latency_p90",
        payload_size,
        "us",
        micros(percentile(&latencies, 0.90)),
    );
    m.push(
        "latency_p99",
        payload_size,
        "us",
        micros(percentile(&latencies, 0.99)),
    );
    m.push(
        "latency_p50_per_byte",
        payload_size,
        "ns/B",
        nanos(p50) / size as f64,
    );

    let cpu_before = procfs::cpu_seconds(server.pid())?;
    let elapsed = pipelined(&mut server, &|_| &payload, counts.pipelined, plan.window)?;
    let cpu = procfs::cpu_seconds(server.pid())? - cpu_before;
    m.replies_checked += counts.pipelined as u64;
    let per_call = elapsed.as_secs_f64() / counts.pipelined as f64;
    m.push("throughput", payload_size, "calls/s", 1.0 / per_call);
    m.push(
        "pipelined_per_byte",
        payload_size,
        "ns/B",
        per_call * 1e9 / size as f64,
    );
    m.push(
        "cpu_per_1k",
        payload_size,
        "ms",
        cpu * 1e6 / counts.pipelined as f64,
    );
    m.push(
        "rss_load",
        payload_size,
        "KiB",
        procfs::peak_rss_kib(server.pid())? as f64,
    );

    in_flight_at_eof(&mut server, &payload, counts.at_eof)?;
    m.replies_checked += counts.at_eof as u64;
    m.push(
        "answered_at_eof",
        payload_size,
        "calls",
        counts.at_eof as f64,
    );
    Ok(())
}

/// Sends `server/discover` and checks the reply.
fn discover(server: &mut Server, id: u64) -> Result<(), String> {
    let input = server.input()?;
    input
        .write_all(wire::discover_request(id).as_bytes())
        .and_then(|()| input.flush())
        .map_err(write_error)?;
    wire::check_discover(server.output.expect()?, id)
}

/// `n` calls, one at a time: the round-trip time of each, from the first
/// byte written to the last byte of the reply read.
fn sequential(server: &mut Server, payload: &Payload, n: usize) -> Result<Vec<Duration>, String> {
    let mut times = Vec::with_capacity(n);
    for id in server.ids(n) {
        let started = Instant::now();
        let input = server.input()?;
        payload
            .write_call(input, id)
            .and_then(|()| input.flush())
            .map_err(write_error)?;
        loop {
            let line = server.output.expect()?;
            let elapsed = started.elapsed();
            match payload.check(line)? {
                Reply::Notification => continue,
                Reply::Echo(got) if got == id => break times.push(elapsed),
                Reply::Echo(got) => return Err(format!("sent call {id}, got the reply to {got}")),
            }
        }
    }
    Ok(times)
}

/// `n` calls with up to `window` in flight, call `id` carrying
/// `payload_of(id)`: a writer thread sends a call whenever a reply frees a
/// slot; this thread reads and checks every reply (in any order, each id
/// exactly once). Returns the time from the first write to the last reply.
fn pipelined<'p>(
    server: &mut Server,
    payload_of: &(dyn Fn(u64) -> &'p Payload + Sync),
    n: usize,
    window: usize,
) -> Result<Duration, String> {
    let ids = server.ids(n);
    let first = ids.start;
    let (credit, credits) = crossbeam_channel::unbounded::<()>();
    for _ in 0..window.max(1) {
        let _ = credit.send(());
    }
    let killer = server.killer();
    let Server { input, output, .. } = server;
    let input = input.as_mut().ok_or("stdin already closed")?;
    let started = Instant::now();
    thread::scope(|scope| {
        let writer = scope.spawn(move || -> Result<(), String> {
            for id in ids {
                if credits.try_recv().is_err() {
                    input.flush().map_err(write_error)?;
                    if credits.recv().is_err() {
                        return Ok(()); // the reader gave up
                    }
                }
                payload_of(id).write_call(input, id).map_err(write_error)?;
            }
            input.flush().map_err(write_error)
        });
        let read = (|| {
            let mut seen = vec![false; n];
            for _ in 0..n {
                let id = loop {
                    if let Reply::Echo(id) = wire::check(output.expect()?, payload_of)? {
                        break id;
                    }
                };
                mark(&mut seen, first, id)?;
                let _ = credit.send(());
            }
            Ok(started.elapsed())
        })();
        drop(credit);
        if read.is_err() {
            killer.kill(); // unblocks a writer stuck on a full pipe
        }
        let written = writer.join().expect("writer thread");
        read.and_then(|elapsed| written.map(|()| elapsed))
    })
}

/// Writes `n` calls and closes stdin right behind them (from a thread, so a
/// large burst cannot deadlock on full pipes), then reads until the server's
/// output ends: every call must have been answered, and the server must exit
/// with status 0.
fn in_flight_at_eof(server: &mut Server, payload: &Payload, n: usize) -> Result<(), String> {
    let ids = server.ids(n);
    let first = ids.start;
    let mut input = server.input.take().ok_or("stdin already closed")?;
    let killer = server.killer();
    let output = &mut server.output;
    let answered = thread::scope(|scope| {
        let writer = scope.spawn(move || -> Result<(), String> {
            for id in ids {
                payload.write_call(&mut input, id).map_err(write_error)?;
            }
            input.flush().map_err(write_error)
            // `input` is dropped here: end of input with the calls in flight.
        });
        let read = (|| {
            let mut seen = vec![false; n];
            let mut answered = 0;
            while let Some(line) = output.next()? {
                if let Reply::Echo(id) = payload.check(line)? {
                    mark(&mut seen, first, id)?;
                    answered += 1;
                }
            }
            Ok(answered)
        })();
        if read.is_err() {
            killer.kill();
        }
        let written = writer.join().expect("writer thread");
        read.and_then(|answered| written.map(|()| answered))
    })?;
    if answered != n {
        return Err(format!(
            "{} of {n} calls in flight at end of input got no reply",
            n - answered
        ));
    }
    server.wait_exit()
}

fn write_error(e: std::io::Error) -> String {
    format!("writing to the server: {e}")
}

/// Records that the reply to `id` arrived; a reply to a call never made, or
/// a second reply to one call, is an error.
fn mark(seen: &mut [bool], first: u64, id: u64) -> Result<(), String> {
    let slot = id
        .checked_sub(first)
        .and_then(|i| seen.get_mut(i as usize))
        .ok_or_else(|| format!("reply to call {id}, which was not sent"))?;
    if std::mem::replace(slot, true) {
        return Err(format!("a second reply to call {id}"));
    }
    Ok(())
}

/// The value below which a fraction `p` of the sorted samples lie
/// (nearest rank).
fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len().max(1));
    sorted.get(rank - 1).copied().unwrap_or_default()
}

fn median_duration(samples: &mut [Duration]) -> Duration {
    samples.sort();
    samples.get(samples.len() / 2).copied().unwrap_or_default()
}

/// The median (the mean of the middle two for an even count).
pub fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    match samples.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => samples[n / 2],
        n => (samples[n / 2 - 1] + samples[n / 2]) / 2.0,
    }
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn nanos(d: Duration) -> f64 {
    d.as_secs_f64() * 1e9
}

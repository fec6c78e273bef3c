//! The builder's settings for how a server runs rather than what it
//! serves: its threads, its limits per connection, its shutdown, and the
//! process-wide choices it makes only when asked.

use std::time::Duration;

use super::ServerBuilder;
#[cfg(doc)]
use crate::transport::DEFAULT_MAX_LINE_BYTES;

impl ServerBuilder {
    /// How many worker threads stay once started (default: available
    /// parallelism, at least 2). Threads are started as pooled handlers
    /// need them (each running handler has one) and those beyond this many
    /// exit after 10 s without work. The pool is the server's, shared by
    /// every connection it serves, and has no upper bound of its own: past
    /// this many, a thread starts when a request waits and every thread is
    /// in a handler (one that blocks, or computes) or sending to a client
    /// slow to read. So a connection can have up to
    /// [`max_running`](ServerBuilder::max_running) threads and one sending
    /// (more while handlers wait without their slot:
    /// `RequestContext::wait_without_slot`, a legacy request waiting for
    /// its client's answers), and an HTTP server one per open connection
    /// (`HttpOptions::max_connections`); bound those to bound the threads.
    pub fn workers(mut self, n: usize) -> Self {
        self.config.workers = n.max(1);
        self
    }

    /// How many pooled handlers one connection may run at once (default
    /// 64); beyond it requests wait, unstarted and still cancellable. A
    /// handler that waits for a legacy client's answers gives its place to
    /// a waiting request meanwhile (up to this many may wait at once): the
    /// client's answers are behind the waiting requests in its input, and
    /// must be read.
    pub fn max_running(mut self, n: usize) -> Self {
        self.config.max_running = n.max(1);
        self
    }

    /// How long a worker thread out of jobs spins (yielding the CPU) before
    /// it sleeps (default: not at all). A client that calls pooled tools
    /// one after another then finds the thread awake: on a machine with
    /// idle cores that saves a wake-up per call (tens of microseconds,
    /// BENCHMARKS.md), for up to this much CPU time per idle gap. One
    /// thread spins at a time; a single-CPU process gains nothing. Off by
    /// default: a library does not spend its host's CPU unasked.
    pub fn spin_before_sleep(mut self, spin: Duration) -> Self {
        self.config.spin = spin;
        self
    }

    /// How many requests of one connection may wait for a free place among
    /// [`max_running`](ServerBuilder::max_running) (default 256). When
    /// that many wait the server stops reading the connection's input
    /// until one starts. It stops too, and queued requests wait, while more
    /// than a megabyte of what it wrote waits for a client slow to read.
    pub fn queue_limit(mut self, n: usize) -> Self {
        self.config.queue_limit = n.max(1);
        self
    }

    /// How many bytes of requests may wait for a free place (default
    /// 256 KiB; one request is always admitted whatever its size). With
    /// [`ServerBuilder::queue_limit`] it bounds the memory the server gives
    /// to requests it has not started. Unread input waits in the pipe, which
    /// costs the server nothing, so a small budget loses no throughput
    /// (BENCHMARKS.md); a larger one lets more large requests wait when
    /// every worker is busy.
    pub fn queue_bytes(mut self, n: usize) -> Self {
        self.config.queue_bytes = n.max(1);
        self
    }

    /// The longest input line accepted, in bytes (default 16 MiB,
    /// [`DEFAULT_MAX_LINE_BYTES`]). A longer line is discarded without being
    /// held in memory whole, and answered with `-32600` carrying its
    /// request's id, read from the line as it goes by (`null` only when it
    /// has none; a notification gets no answer).
    pub fn max_line_bytes(mut self, n: usize) -> Self {
        self.config.max_line_bytes = n.max(1);
        self
    }

    /// How many subscriptions one connection may hold open (default
    /// 10,000): open `subscriptions/listen` requests, and the URIs a legacy
    /// session subscribed to with `resources/subscribe`. Past it a new one
    /// is refused with `-32603` until the client cancels one; each costs
    /// the server memory until then. Whatever this is, at most 8 listens
    /// of a connection may follow one task (Tasks extension; over
    /// Streamable HTTP, where each listen is a connection of its own, 8 of
    /// all the listener's): each status change of a task is written in
    /// full to each listen that follows it. A ninth leaves the task out of
    /// its acknowledgment (as it does an unknown task), and is refused
    /// `-32603` if nothing else is left.
    pub fn max_subscriptions(mut self, n: usize) -> Self {
        self.config.max_subscriptions = n.max(1);
        self
    }

    /// How many `resourceSubscriptions` URIs one `subscriptions/listen` may
    /// name (default 1,000); a longer list is refused with `-32602`.
    pub fn max_subscription_uris(mut self, n: usize) -> Self {
        self.config.max_subscription_uris = n.max(1);
        self
    }

    /// How long in-flight handlers may run after end of input or a stop
    /// (default 2 s; a duration too long for the clock waits as long as
    /// they take). After it they are cancelled and answered with `-32603`,
    /// and `serve` returns once the client took what is left; a client that
    /// takes less than 16 KiB of it in the write timeout
    /// ([`ServerBuilder::write_timeout`]) is given up on, and `serve`
    /// returns `TimedOut`. The write timeout holds during the grace period
    /// too: a client that takes less than 16 KiB of a send in progress in
    /// it is let go then, without waiting for the rest of the grace
    /// period (a handler held in a `write(2)` to it would never finish).
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.config.shutdown_grace = grace;
        self
    }

    /// How long a client may take less than 16 KiB of the server's output
    /// while it has some to take before it is taken to be gone (default
    /// 10 s, as long as `HttpOptions::write_timeout`, a client's time to
    /// take anything over Streamable HTTP; nginx's `send_timeout` is the
    /// same rule). While serving, a client that takes less of a send in
    /// progress is let go, whether a handler that publishes waits on it or
    /// not: serving it ends, what waits for it is dropped, and `serve`
    /// returns `TimedOut` with the reason. At the end of serving, after
    /// the grace period, the last replies are dropped so. Else a client
    /// that stopped reading would hold every publisher of the server for
    /// good, one that reads a page every few seconds would hold them at
    /// its pace, and one that closes its input while it reads nothing
    /// would hold `serve` (its reader stuck in a `write(2)`, where it
    /// cannot read the end of input). The time starts again each time the
    /// client has taken 16 KiB: a client that reads 1.6 KiB a second or
    /// more (at the default) is not let go by this, and that is the floor
    /// of the pace one client may hold the publishers of every connection
    /// to, when they publish changes about more things than a megabyte of
    /// notifications holds (a client that reads just that fast holds them
    /// so for as long as it likes; a server of many untrusted connections
    /// lowers this to raise the floor). Changes about the same things hold
    /// no publisher: behind a client that is behind, each subscription
    /// keeps the latest change about each thing. On a Unix socket, whose writer sees the client's
    /// reads in batches of about 160 KiB, the least rate kept is ten times
    /// higher: 16 KiB a second at the default. At least 1 ms (zero is 1
    /// ms, not "never"; `Duration::MAX` is never).
    pub fn write_timeout(mut self, timeout: Duration) -> Self {
        self.config.write_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// How long a request waits for a legacy client's answers to the
    /// requests the server sends it on a handler's behalf
    /// (`elicitation/create`, `sampling/createMessage`, `roots/list`; each
    /// round of them, when a handler asks again; default 60 s, as the
    /// TypeScript SDK waits; a duration too long for the clock waits for
    /// ever). Past it the server cancels the unanswered
    /// asks at the client (`notifications/cancelled`) and answers the
    /// request with `-32603`, saying which went unanswered: spec 2025-11-25
    /// basic/lifecycle ("Timeouts") asks every sender of a request to give
    /// up after a while, so a client that never answers does not hold a
    /// request, and its thread, for ever. A modern (2026-07-28) client is
    /// never waited for: it retries with its answers (nor is anyone without
    /// the `legacy` feature).
    pub fn ask_timeout(mut self, timeout: Duration) -> Self {
        self.config.ask_timeout = timeout;
        self
    }

    /// Whether a server gives the memory a burst of large messages freed
    /// back to the system once it is idle (default `false`).
    ///
    /// With glibc, freed memory otherwise stays with the process: a burst
    /// of 400 calls of 1 KB to 3 MB left a pooled echo server at 54-88 MB
    /// idle, against 3.1 MB with this (BENCHMARKS.md). It works by two
    /// process-wide allocator settings, which is why it is off unless
    /// asked: [`build`](ServerBuilder::build) makes threads started from
    /// then on share the main heap (`M_ARENA_MAX` 1), and `serve` trims
    /// that heap (`malloc_trim`) after 250 ms without a request. A process
    /// that is a server and little else (the example servers, say) wants
    /// it; an application that embeds a server and allocates hard from
    /// threads of its own may not. Any `MALLOC_*` variable or
    /// `GLIBC_TUNABLES` in the environment leaves the allocator's settings
    /// alone. Elsewhere than glibc it does nothing.
    pub fn release_memory_when_idle(mut self, release: bool) -> Self {
        self.config.release_memory = release;
        self
    }
}

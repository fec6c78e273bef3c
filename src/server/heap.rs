//! Giving memory back to the system once a burst of large messages is over.
//!
//! glibc keeps what a burst frees. Once a large mapped block is freed, its
//! mmap threshold rises to that size and its trim threshold to twice that,
//! so later payload-sized buffers come from the heaps and stay there when
//! freed. And every thread that allocates gets a heap of its own (up to 8
//! per core: the reader, each pool worker), whose free top `malloc_trim`
//! cannot shrink: it only can the main heap's. 400 pipelined calls of 1 KB
//! to 3 MB left a pooled echo server at 54-92 MB once idle, from 2.6 MB.
//!
//! So the server's threads share the main heap, and `serve` trims it
//! once the server has been idle a moment (3.2 MB after the same burst;
//! BENCHMARKS.md has the figures and the cost). Unless the application
//! said no (`ServerBuilder::release_memory_when_idle`) or configures the
//! allocator itself (`MALLOC_*`, `GLIBC_TUNABLES`); elsewhere than glibc
//! both are no-ops.
//!
//! The crate's only unsafe code: two glibc functions, declared safe to
//! call, in this module alone.
#![allow(unsafe_code)]

use std::time::{Duration, Instant};

/// How long a connection goes without a request before the memory its
/// work freed goes back to the system, when asked
/// ([`ServerBuilder::release_memory_when_idle`](crate::ServerBuilder::release_memory_when_idle)).
const IDLE: Duration = Duration::from_millis(250);

#[cfg(all(target_os = "linux", target_env = "gnu"))]
unsafe extern "C" {
    // Both take plain integers and touch only the allocator's own state:
    // no argument makes them unsound.
    safe fn mallopt(param: i32, value: i32) -> i32;
    safe fn malloc_trim(pad: usize) -> i32;
}

/// Makes threads share the main heap. Call it before the server's threads
/// start: a thread that already has a heap of its own keeps it.
pub(crate) fn prepare() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if !std::env::vars_os().any(|(name, _)| {
        let name = name.as_encoded_bytes();
        name.starts_with(b"MALLOC_") || name == b"GLIBC_TUNABLES"
    }) {
        const M_ARENA_MAX: i32 = -8; // glibc's malloc.h
        mallopt(M_ARENA_MAX, 1);
    }
}

/// Returns the allocator's free pages to the system.
pub(crate) fn give_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    malloc_trim(0);
}

/// A connection's idle spells, looked at every [`IDLE`] by the thread in
/// `serve` while it waits for the end: memory goes back after each spell
/// in which no line was handled, after one in which some were.
pub(crate) struct Spells {
    seen: u64,
    worked: bool,
    next: Instant,
}

impl Spells {
    /// The first look is [`IDLE`] from now.
    pub(crate) fn new() -> Spells {
        Spells {
            seen: 0,
            worked: false,
            next: Instant::now() + IDLE,
        }
    }

    /// How long until the next look.
    pub(crate) fn until_next(&self) -> Duration {
        self.next.saturating_duration_since(Instant::now())
    }

    /// Looks, if its time came: gives memory back if `lines` (the lines
    /// handled so far) did not change since the last look, after a look
    /// at which it did.
    pub(crate) fn look(&mut self, lines: impl FnOnce() -> u64) {
        let now = Instant::now();
        if now < self.next {
            return;
        }
        self.next = now + IDLE;
        let lines = lines();
        if lines != self.seen {
            (self.seen, self.worked) = (lines, true);
        } else if std::mem::take(&mut self.worked) {
            give_back();
        }
    }
}

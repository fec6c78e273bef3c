//! What reading the envelope of an over-long line costs: the streaming
//! scan of `src/envelope_scan.rs` (compiled in here as it is) over lines of
//! 64 MiB whose `id` is the last member, fed in 8 KiB chunks as the
//! reader's buffer gives them. Prints the best of five runs per kind of
//! content, in nanoseconds per byte.
//!
//! ```text
//! cargo run --release --example scan_cost
//! ```

#[allow(dead_code)] // the reader uses more of it than this benchmark
#[path = "../src/envelope_scan.rs"]
mod envelope_scan;

/// What the scan module names `crate::jsonrpc`.
mod jsonrpc {
    pub use mcp_stdio::RequestId;
}

use std::time::Instant;

use envelope_scan::EnvelopeScan;
use mcp_stdio::RequestId;

const LINE: usize = 64 << 20;

/// A line of about `LINE` bytes: `head`, `unit` repeated, then `tail`.
fn line(head: &[u8], unit: &[u8], tail: &[u8]) -> Vec<u8> {
    let mut line = Vec::with_capacity(LINE);
    line.extend_from_slice(head);
    while line.len() + unit.len() + tail.len() <= LINE {
        line.extend_from_slice(unit);
    }
    line.extend_from_slice(tail);
    line
}

fn main() {
    let head =
        br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{"text":""#;
    let tail = br#""}},"id":99}"#;
    let cases = [
        (
            "plain text",
            line(head, b"the quick brown fox jumps over it ", tail),
        ),
        (
            "JSON as text",
            line(head, br#"{\"k\":[1,2,{\"v\":\"x\"}]},"#, tail),
        ),
        ("escapes only", line(head, br#"\"\\a"#, tail)),
        (
            "numbers",
            line(
                br#"{"jsonrpc":"2.0","method":"m","params":{"n":["#,
                b"12345,[6],",
                br#"0]},"id":99}"#,
            ),
        ),
    ];
    for (kind, line) in &cases {
        let mut best = f64::MAX;
        for _ in 0..5 {
            let started = Instant::now();
            let mut scan = EnvelopeScan::new();
            for chunk in line.chunks(8 * 1024) {
                scan.feed(chunk);
            }
            let envelope = scan.finish();
            best = best.min(started.elapsed().as_secs_f64());
            assert_eq!(envelope.id, Some(RequestId::Number(99)), "{kind}");
        }
        println!(
            "{kind:<13} {:.0} MiB: {:6.1} ms, {:.2} ns/byte",
            line.len() as f64 / f64::from(1 << 20),
            best * 1e3,
            best * 1e9 / line.len() as f64
        );
    }
}

//! What `/proc` says about a server process: its CPU time and resident
//! set. Shared by the stdio load generator (`examples/loadgen`) and the
//! HTTP one (`examples/httpload`, through `#[path]`).

use std::process::Command;
use std::sync::OnceLock;

/// The process's peak resident set size so far (`VmHWM`), in KiB.
pub fn peak_rss_kib(pid: u32) -> Result<u64, String> {
    status_kib(pid, "VmHWM:")
}

/// The process's resident set size now (`VmRSS`), in KiB.
pub fn rss_kib(pid: u32) -> Result<u64, String> {
    status_kib(pid, "VmRSS:")
}

/// A `kB` field of `/proc/<pid>/status`.
fn status_kib(pid: u32, field: &str) -> Result<u64, String> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| format!("{path}: no {field}"))
}

/// The CPU time the process (all its threads, living and dead) has used,
/// user plus system (`utime + stime`, `/proc/<pid>/stat`), in seconds. The
/// kernel reports it in clock ticks (10 ms on most systems).
pub fn cpu_seconds(pid: u32) -> Result<f64, String> {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    // The command name (field 2) is in parentheses and may hold spaces:
    // count fields from the last `)`. Field 3 (state) comes first there,
    // so utime (field 14) and stime (field 15) are at 11 and 12.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let tick = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    match (tick(11), tick(12)) {
        (Some(utime), Some(stime)) => Ok((utime + stime) as f64 / ticks_per_second()),
        _ => Err(format!("{path}: cannot parse utime and stime")),
    }
}

/// `getconf CLK_TCK`, asked once (100 if that fails).
pub fn ticks_per_second() -> f64 {
    static TICKS: OnceLock<f64> = OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|out| String::from_utf8(out.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

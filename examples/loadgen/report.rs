//! Medians over rounds, ratios against the first command, and the two
//! output forms: a table, or one JSON object per figure.

use std::io::{self, Write};

use serde_json::json;

use crate::measure::{Measurement, median};

/// One figure (at one payload size) for every command.
#[derive(Clone, Debug)]
pub struct Row {
    pub name: &'static str,
    pub payload: Option<usize>,
    pub unit: &'static str,
    /// `values[command][round]`.
    pub values: Vec<Vec<f64>>,
    /// The median over the rounds, per command.
    pub medians: Vec<f64>,
}

impl Row {
    /// This command's median over the first command's.
    pub fn ratio(&self, command: usize) -> f64 {
        self.medians[command] / self.medians[0]
    }
}

/// Collects `runs[command][round]` into rows: figures in the order they
/// were first measured, each at every payload size.
pub fn summarize(runs: &[Vec<Measurement>]) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    let mut order: Vec<&'static str> = Vec::new();
    for (command, rounds) in runs.iter().enumerate() {
        for measurement in rounds {
            for figure in &measurement.figures {
                let index = rows
                    .iter()
                    .position(|r| r.name == figure.name && r.payload == figure.payload)
                    .unwrap_or_else(|| {
                        rows.push(Row {
                            name: figure.name,
                            payload: figure.payload,
                            unit: figure.unit,
                            values: vec![Vec::new(); runs.len()],
                            medians: Vec::new(),
                        });
                        if !order.contains(&figure.name) {
                            order.push(figure.name);
                        }
                        rows.len() - 1
                    });
                rows[index].values[command].push(figure.value);
            }
        }
    }
    for row in &mut rows {
        row.medians = row.values.iter().map(|v| median(&mut v.clone())).collect();
    }
    let rank = |name| order.iter().position(|n| *n == name);
    rows.sort_by_key(|r| (rank(r.name), r.payload));
    rows
}

/// What a figure is, for the table.
pub fn describe(name: &str) -> &str {
    match name {
        "startup" => "startup: spawn -> discover reply",
        "exit_idle" => "exit after stdin EOF, idle",
        "rss_idle" => "peak RSS (VmHWM), idle",
        "latency_p50" => "sequential round trip p50",
        "latency_p90" => "sequential round trip p90",
        "latency_p99" => "sequential round trip p99",
        "latency_p50_per_byte" => "p50 round trip per payload byte",
        "throughput" => "pipelined throughput",
        "pipelined_per_byte" => "pipelined time per payload byte",
        "cpu_per_1k" => "server CPU per 1,000 pipelined calls",
        "rss_load" => "peak RSS (VmHWM) after pipelined",
        "answered_at_eof" => "calls in flight at EOF, all answered",
        "rss_before_burst" => "RSS (VmRSS) idle, before a burst",
        "rss_after_burst" => "RSS idle 1 s after 1 KiB-3 MiB burst",
        other => other,
    }
}

/// `A`, `B`, ... for command 0, 1, ...
pub fn letter(command: usize) -> String {
    char::from_u32('A' as u32 + command as u32).map_or_else(|| format!("#{command}"), String::from)
}

/// `32 B`, `1 KiB`, `64 KiB`, `1 MiB`, or the byte count.
pub fn size_label(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

/// About three significant digits.
pub fn number(v: f64) -> String {
    match v.abs() {
        a if a >= 1000.0 => format!("{v:.0}"),
        a if a >= 100.0 => format!("{v:.1}"),
        a if a >= 10.0 => format!("{v:.2}"),
        _ => format!("{v:.3}"),
    }
}

/// The table: one line per figure and size, a column of medians per
/// command, then each command's ratio to the first.
pub fn write_table(out: &mut impl Write, labels: &[String], rows: &[Row]) -> io::Result<()> {
    for (i, label) in labels.iter().enumerate() {
        writeln!(out, "{} = {label}", letter(i))?;
    }
    write!(out, "{:<38} {:>7} {:>8}", "figure", "payload", "unit")?;
    for i in 0..labels.len() {
        write!(out, " {:>10}", letter(i))?;
    }
    for i in 1..labels.len() {
        write!(out, " {:>7}", format!("{}/A", letter(i)))?;
    }
    writeln!(out)?;
    for row in rows {
        let payload = row.payload.map_or_else(|| "-".to_owned(), size_label);
        write!(
            out,
            "{:<38} {:>7} {:>8}",
            describe(row.name),
            payload,
            row.unit
        )?;
        for m in &row.medians {
            write!(out, " {:>10}", number(*m))?;
        }
        for i in 1..labels.len() {
            write!(out, " {:>7}", format!("{:.2}", row.ratio(i)))?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// One JSON object per figure, size and command: the median over the
/// rounds (`value`), every round's value, and the ratio to the first
/// command's median.
pub fn write_json(out: &mut impl Write, labels: &[String], rows: &[Row]) -> io::Result<()> {
    for row in rows {
        for (i, label) in labels.iter().enumerate() {
            let object = json!({
                "server": label,
                "figure": row.name,
                "payload_bytes": row.payload,
                "unit": row.unit,
                "value": row.medians[i],
                "rounds": row.values[i],
                "ratio": row.ratio(i),
            });
            writeln!(out, "{object}")?;
        }
    }
    Ok(())
}

//! What `check` prints: one line per check and a summary (text), one JSON
//! object per check with its evidence (json), a JUnit report (junit), and
//! the catalogue (`--list`: text, markdown or json).

use std::fmt::Write as _;
use std::io::Write;
use std::time::Duration;

use serde_json::json;

use super::args::Format;
use super::driver::{Era, Target};
use super::{Check, Facts, Outcome, Status};

/// Prints the catalogue.
pub fn list(checks: &[&Check], format: Format) {
    let mut out = String::new();
    match format {
        Format::Markdown => {
            out.push_str("| id | level | spec | the sentence it enforces |\n|---|---|---|---|\n");
            for c in checks {
                out.push_str(&format!(
                    "| `{}` | {} | `{}` | {} |\n",
                    c.id,
                    c.level.name(),
                    c.page,
                    c.quote.replace('|', "\\|")
                ));
            }
            out.push_str(&format!("\n{}\n", counts(checks)));
        }
        Format::Json | Format::Junit => {
            for c in checks {
                out.push_str(&format!(
                    "{}\n",
                    json!({ "id": c.id, "group": c.group(), "level": c.level.name(), "page": c.page, "quote": c.quote, "title": c.title })
                ));
            }
        }
        Format::Text => {
            for c in checks {
                out.push_str(&format!(
                    "{:<40} {:<6} {}\n    {}: \"{}\"\n",
                    c.id,
                    c.level.name(),
                    c.title,
                    c.page,
                    c.quote
                ));
            }
            out.push_str(&format!("{}\n", counts(checks)));
        }
    }
    print(&out);
}

/// `N checks: by group ...; by level ...`.
fn counts(checks: &[&Check]) -> String {
    let mut groups: Vec<(&str, usize)> = Vec::new();
    for c in checks {
        match groups.iter_mut().find(|(g, _)| *g == c.group()) {
            Some((_, n)) => *n += 1,
            None => groups.push((c.group(), 1)),
        }
    }
    let level = |l| checks.iter().filter(|c| c.level == l).count();
    format!(
        "{} checks: {}; {} MUST, {} SHOULD, {} MAY",
        checks.len(),
        groups
            .iter()
            .map(|(g, n)| format!("{g} {n}"))
            .collect::<Vec<_>>()
            .join(", "),
        level(super::Level::Must),
        level(super::Level::Should),
        level(super::Level::May)
    )
}

/// Writes to stdout; a closed stdout (`| head`) ends nothing.
fn print(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// One JSON object on a line, escaped for a terminal (`escape::json`: the
/// value is unchanged).
fn print_json(value: &serde_json::Value) {
    print(&format!("{}\n", crate::escape::json(&value.to_string())));
}

/// The report of a run, printed as it goes.
pub struct Report {
    format: Format,
    server: String,
    /// The era the checks speak (`Facts::primary`), and why it is the
    /// legacy one of a server that speaks both (`Facts::why_legacy`).
    era: &'static str,
    why_legacy: Option<String>,
}

impl Report {
    pub fn new(format: Format, target: &Target, facts: &Facts) -> Report {
        let server = match target {
            Target::Command(argv) => argv.join(" "),
            Target::Url(url, _) => crate::url_for_people::url_for_people(url),
        };
        if format == Format::Text {
            let era = |r: &Option<serde_json::Value>,
                       unread: &Option<String>,
                       n: &Option<String>,
                       name: &str| match (r, unread, n) {
                (Some(_), _, _) => format!("{name}: yes"),
                (None, Some(why), _) => {
                    format!("{name}: yes, unread ({})", super::short(why, 100))
                }
                (None, None, Some(why)) => format!("{name}: no ({})", super::short(why, 100)),
                (None, None, None) => format!("{name}: no"),
            };
            let info = facts
                .discover
                .as_ref()
                .and_then(|d| d.pointer("/_meta/io.modelcontextprotocol~1serverInfo"))
                .or_else(|| facts.initialize.as_ref().and_then(|i| i.get("serverInfo")));
            let name = info.map_or_else(
                || "?".to_owned(),
                |i| {
                    format!(
                        "{} {}",
                        i.get("name").and_then(|n| n.as_str()).unwrap_or("?"),
                        i.get("version").and_then(|n| n.as_str()).unwrap_or("")
                    )
                },
            );
            let header = format!(
                "checking {server} ({}; {}; {}; checked in {}{})",
                name.trim(),
                era(
                    &facts.discover,
                    &facts.unread_modern,
                    &facts.no_modern,
                    "modern"
                ),
                era(
                    &facts.initialize,
                    &facts.unread_legacy,
                    &facts.no_legacy,
                    "legacy"
                ),
                facts.primary.map_or("no era", Era::name),
                // Why is in "modern: yes, unread (...)".
                if facts.why_legacy().is_some() {
                    ", whose handshake was read"
                } else {
                    ""
                }
            );
            // The server's name and errors are its own text: escaped.
            print(&format!("{}\n", crate::escape::line(&header)));
        }
        Report {
            format,
            server,
            era: facts.primary.map_or("no era", Era::name),
            why_legacy: facts.why_legacy(),
        }
    }

    /// One check's outcome, as it comes.
    pub fn one(&mut self, o: &Outcome) {
        match self.format {
            Format::Text => print(&format!(
                "{:<4}  {:<6}  {:<38} {}\n",
                o.status.name(),
                o.check.level.name(),
                o.check.id,
                crate::escape::line(&super::short(&one_line(&o.reason), 150))
            )),
            Format::Json => {
                let evidence: Vec<_> = o
                    .evidence
                    .iter()
                    .map(|e| json!({ "kind": e.kind, "text": e.text }))
                    .collect();
                // The server's text: what JSON leaves raw and a terminal
                // obeys (C1, bidi controls), as `\uXXXX`, whatever the
                // stream (a report saved is read in a terminal later).
                print_json(&json!({
                        "id": o.check.id, "group": o.check.group(), "level": o.check.level.name(),
                        "status": o.status.name(), "reason": o.reason, "page": o.check.page,
                        "quote": o.check.quote, "ms": o.elapsed.as_millis() as u64, "evidence": evidence
                }));
            }
            Format::Junit | Format::Markdown => {}
        }
    }

    /// The summary (text, json) or the whole report (junit).
    pub fn end(&mut self, outcomes: &[Outcome], elapsed: Duration) {
        let count = |s: Status| outcomes.iter().filter(|o| o.status == s).count();
        let (pass, fail, warn, skip) = (
            count(Status::Pass),
            count(Status::Fail),
            count(Status::Warn),
            count(Status::Skip),
        );
        match self.format {
            // Not "N passed, M failed": a CI log reader would take it for
            // a test runner's.
            Format::Text => print(&format!(
                "{} checks in {:.1} s: {pass} pass, {fail} fail (MUST), {warn} warn (SHOULD/MAY), {skip} skip\n",
                outcomes.len(),
                elapsed.as_secs_f64()
            )),
            Format::Json => print_json(
                &json!({ "summary": { "server": self.server, "era": self.era, "why_legacy": self.why_legacy, "checks": outcomes.len(), "pass": pass, "fail": fail, "warn": warn, "skip": skip, "seconds": elapsed.as_secs_f64() } }),
            ),
            Format::Junit => print(&junit(&self.server, outcomes, elapsed)),
            Format::Markdown => {}
        }
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A JUnit report: one test case per check; a warning passes with its
/// reason in `system-out`.
fn junit(server: &str, outcomes: &[Outcome], elapsed: Duration) -> String {
    let count = |s: Status| outcomes.iter().filter(|o| o.status == s).count();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(&format!(
        "<testsuites>\n<testsuite name=\"mcp-stdio check {}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" time=\"{:.3}\">\n",
        xml(server),
        outcomes.len(),
        count(Status::Fail),
        count(Status::Skip),
        elapsed.as_secs_f64()
    ));
    for o in outcomes {
        out.push_str(&format!(
            "  <testcase classname=\"{}\" name=\"{} [{}]\" time=\"{:.3}\">",
            xml(o.check.group()),
            xml(o.check.id),
            o.check.level.name(),
            o.elapsed.as_secs_f64()
        ));
        let evidence: String = o
            .evidence
            .iter()
            .map(|e| format!("{} {}\n", e.kind, e.text))
            .collect();
        match o.status {
            Status::Pass => {}
            Status::Fail => out.push_str(&format!(
                "\n    <failure message=\"{}\">{}: &quot;{}&quot;\n{}</failure>\n  ",
                xml(&one_line(&o.reason)),
                xml(o.check.page),
                xml(o.check.quote),
                xml(&evidence)
            )),
            Status::Warn => out.push_str(&format!(
                "\n    <system-out>warning ({}): {}\n{}</system-out>\n  ",
                o.check.level.name(),
                xml(&one_line(&o.reason)),
                xml(&evidence)
            )),
            Status::Skip => out.push_str(&format!(
                "<skipped message=\"{}\"/>",
                xml(&one_line(&o.reason))
            )),
        }
        out.push_str("</testcase>\n");
    }
    out.push_str("</testsuite>\n</testsuites>\n");
    out
}

/// Text escaped for XML; characters XML 1.0 cannot carry are dropped;
/// those it carries raw but a terminal obeys (what `escape::json`
/// escapes: C1 and bidi controls) as character references, the same
/// characters to an XML reader.
fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c if crate::escape::left_by_json(c) => {
                let _ = write!(out, "&#x{:x};", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

//! `mcp-stdio check`: a conformance checker any server author can run.
//!
//! The catalogue is the spec, cited: each check is a plain function with
//! its id, its level (the keyword of the sentence it enforces), the spec
//! page and that sentence, quoted (`--list` prints them; `tests/check/`
//! finds every quote in `tests/spec/`). One file per group: `stdio`,
//! `jsonrpc`, `lifecycle`, `results` (the `schema` group: every result
//! against `schema.json` of its era, validated by `schema.rs`), `tools`,
//! `features` (resources, prompts, completion), `cancel`, `mrtr`,
//! `tasks`, `subscriptions`, `legacy`, `http`. `facts.rs` learns what the server
//! offers; `driver.rs` is the session (raw lines out and in, every line
//! kept as evidence) over `stdio_link.rs` (a child process) or
//! `http_link.rs` (a URL); `tool_schema.rs` reads a tool's own schema;
//! `format.rs` prints the reports, `args.rs` reads the command line,
//! `runner.rs` runs the checks.
//!
//! How a run goes: `Facts::gather` starts the server once to learn what
//! it speaks and offers (the eras, the capabilities, the lists); then
//! each check runs on a thread of its own with its own deadline, on a
//! session shared with the checks before it (one per era) or on a server
//! of its own when it needs the process itself (its end of input, its
//! signals, its first lines). A check that overruns its deadline is
//! failed, its servers killed, and the run goes on.
//!
//! Safe by default: no tool is called with arguments its schema accepts
//! unless the user names it (`--call NAME`); the checks that need such a
//! call (`tools.call-result`, `cancel.no-reply-after-cancel`) are skipped
//! without it and say so. Everything else a check sends is a list, a
//! read of a resource or prompt the server lists, a completion, or a
//! request the server must refuse.

mod args;
mod cancel;
mod driver;
mod facts;
mod features;
mod format;
mod http;
mod http_link;
mod jsonrpc;
mod legacy;
mod lifecycle;
mod mrtr;
mod results;
mod runner;
mod schema;
mod stdio;
mod stdio_link;
mod subscriptions;
mod tasks;
mod tool_schema;
mod tools;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

pub use args::Args;
use driver::{Era, Session, Target, Transcript};
pub use facts::{Facts, list_all};
use runner::run_checks;

/// The exit statuses of `check`.
pub mod status {
    /// No MUST failed.
    pub const PASSED: u8 = 0;
    /// A MUST failed.
    pub const FAILED: u8 = 1;
    /// The server could not be started or reached, or the command line
    /// was wrong.
    pub const UNREACHABLE: u8 = 2;
}

/// The keyword of the quoted sentence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Must,
    Should,
    May,
}

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::Must => "MUST",
            Level::Should => "SHOULD",
            Level::May => "MAY",
        }
    }
}

/// One check of the catalogue.
pub struct Check {
    /// `group.name`.
    pub id: &'static str,
    pub level: Level,
    /// The page under the spec's folder: `2026-07-28/basic/transports/stdio.md`,
    /// or a schema definition: `2026-07-28/schema.json#ParseError`.
    pub page: &'static str,
    /// The sentence it enforces, verbatim (markdown emphasis and links
    /// aside).
    pub quote: &'static str,
    /// What it does, in a few words.
    pub title: &'static str,
    pub run: fn(&mut Ctx) -> Verdict,
}

impl Check {
    pub fn group(&self) -> &'static str {
        self.id.split('.').next().unwrap_or(self.id)
    }
}

/// What a check found.
#[derive(Debug, Clone)]
pub enum Verdict {
    Pass(String),
    /// A MUST check fails; a SHOULD or MAY check warns.
    Fail(String),
    /// It does not apply: the capability, the tool or the era is not
    /// offered, or it needs `--call`.
    Skip(String),
}

/// The outcome as printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Pass,
    Fail,
    Warn,
    Skip,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Warn => "warn",
            Status::Skip => "skip",
        }
    }
}

/// One check's outcome, with its evidence.
pub struct Outcome {
    pub check: &'static Check,
    pub status: Status,
    pub reason: String,
    pub evidence: Vec<driver::Evidence>,
    pub elapsed: Duration,
}

/// Every check, in the order they run.
pub fn catalogue() -> Vec<&'static Check> {
    [
        stdio::CHECKS,
        jsonrpc::CHECKS,
        lifecycle::CHECKS,
        results::CHECKS,
        tools::CHECKS,
        features::CHECKS,
        cancel::CHECKS,
        mrtr::CHECKS,
        tasks::CHECKS,
        subscriptions::CHECKS,
        legacy::CHECKS,
        http::CHECKS,
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// A tool named with `--call`, and the arguments to call it with.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub tool: String,
    pub arguments: Value,
}

/// What a check works with.
pub struct Ctx {
    pub target: Arc<Target>,
    pub facts: Arc<Facts>,
    pub calls: Arc<Vec<Call>>,
    /// How long to wait for one answer.
    pub wait: Duration,
    /// When the check's deadline passes (`--deadline` after its start).
    pub until: Instant,
    /// This check's evidence (its own sessions write into it).
    pub transcript: Transcript,
    /// The sessions shared between checks, by era; given back after the
    /// check unless it spoiled them.
    shared: BTreeMap<&'static str, (Session, Transcript)>,
}

impl Ctx {
    /// The shared session of the primary era.
    pub fn session(&mut self) -> Result<&mut Session, Verdict> {
        let era = self.facts.primary.unwrap_or(Era::Modern);
        self.session_in(era)
    }

    /// The shared session of `era`, started on first use.
    pub fn session_in(&mut self, era: Era) -> Result<&mut Session, Verdict> {
        let key = era.name();
        if !self.shared.contains_key(key) {
            let transcript = Transcript::default();
            let session = Session::start(&self.target, era, &transcript, self.wait)
                .map_err(|e| Verdict::Fail(format!("could not start a session: {e}")))?;
            self.shared.insert(key, (session, transcript));
        }
        Ok(&mut self.shared.get_mut(key).expect("inserted").0)
    }

    /// A server (or HTTP session) of the check's own, in `era`.
    pub fn fresh(&self, era: Era) -> Result<Session, Verdict> {
        Session::start(&self.target, era, &self.transcript, self.wait)
            .map_err(|e| Verdict::Fail(format!("could not start the server: {e}")))
    }

    /// A server of the check's own, not yet spoken to.
    pub fn fresh_connect(&self) -> Result<Session, Verdict> {
        Session::connect(&self.target, &self.transcript, self.wait)
            .map_err(|e| Verdict::Fail(format!("could not start the server: {e}")))
    }

    /// The shared session of the primary era is not to be reused (the
    /// check left it in a state the next one must not inherit): it is
    /// ended, its evidence kept for this check.
    pub fn spoil(&mut self) {
        let era = self.facts.primary.unwrap_or(Era::Modern);
        if let Some((session, transcript)) = self.shared.remove(era.name()) {
            drop(session);
            self.transcript.extend(transcript.take());
        }
    }

    /// A request in the primary era's shared session, answered within the
    /// wait: the whole response.
    pub fn ask(&mut self, method: &str, params: Value) -> Result<Value, Verdict> {
        let wait = self.wait;
        let session = self.session()?;
        session
            .call(method, params, wait)
            .map_err(|e| e.verdict(method))
    }

    /// `ask`, for a check that needs an error: an answer the checker
    /// cannot read that is a result fails (`Missing::verdict_wanting_error`).
    pub fn ask_error(&mut self, method: &str, params: Value) -> Result<Value, Verdict> {
        let wait = self.wait;
        let session = self.session()?;
        session
            .call(method, params, wait)
            .map_err(|e| e.verdict_wanting_error(method))
    }

    /// `ask`, for a check that needs a result: an answer the checker
    /// cannot read that is an error fails (`Missing::verdict_wanting_result`).
    pub fn ask_result(&mut self, method: &str, params: Value) -> Result<Value, Verdict> {
        let wait = self.wait;
        let session = self.session()?;
        session
            .call(method, params, wait)
            .map_err(|e| e.verdict_wanting_result(method))
    }
}

/// Runs `mcp-stdio check` with the arguments after `check`; the exit
/// status.
pub fn main(argv: Vec<String>) -> u8 {
    let args = match Args::parse(argv) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("mcp-stdio check: {message}");
            return status::UNREACHABLE;
        }
    };
    if args.help {
        print!("{}", args::HELP);
        return status::PASSED;
    }
    let selected: Vec<&'static Check> = catalogue()
        .into_iter()
        .filter(|c| args.selects(c))
        .collect();
    if args.list {
        format::list(&selected, args.format);
        return status::PASSED;
    }
    let Some(target) = args.target.clone() else {
        eprintln!(
            "mcp-stdio check: no server: give its command after -- (mcp-stdio check -- python -m my_server) or --url http://HOST:PORT/mcp"
        );
        return status::UNREACHABLE;
    };
    let started = Instant::now();
    let facts = match Facts::gather(&target, args.era, args.wait, args.deadline) {
        Ok(facts) => facts,
        Err(facts::Unreached::Not(message)) => {
            // It may carry the server's stderr: escaped, on one line.
            eprintln!("mcp-stdio check: {}", crate::escape::line(&message));
            return status::UNREACHABLE;
        }
        Err(facts::Unreached::OtherId(message)) => {
            // Reached, and a MUST broken: "Result responses MUST include
            // the same ID as the request" (basic/index.md).
            eprintln!(
                "mcp-stdio check: {}: responses MUST include the same ID as the request",
                crate::escape::line(&message)
            );
            return status::FAILED;
        }
        Err(facts::Unreached::NotJson(message)) => {
            // Reached, and a MUST broken: "The server MUST NOT write
            // anything to its stdout that is not a valid MCP message"
            // (basic/transports.md).
            eprintln!(
                "mcp-stdio check: {}: a server MUST NOT write anything that is not a valid MCP message",
                crate::escape::line(&message)
            );
            return status::FAILED;
        }
    };
    if let Some(message) = unlisted_call(&facts, &args.calls) {
        // It names the server's tools: its own text, escaped.
        eprintln!("mcp-stdio check: {}", crate::escape::line(&message));
        return status::UNREACHABLE;
    }
    let mut report = format::Report::new(args.format, &target, &facts);
    let outcomes = run_checks(&selected, &target, facts, &args, |outcome| {
        report.one(outcome)
    });
    report.end(&outcomes, started.elapsed());
    if outcomes.iter().any(|o| o.status == Status::Fail) {
        status::FAILED
    } else {
        status::PASSED
    }
}

/// A `--call` naming a tool the server does not list: the command line
/// is wrong (a usage error, status 2), not the server. `None` when every
/// tool named is listed, or the list could not be read (the checks say
/// so then).
fn unlisted_call(facts: &Facts, calls: &[Call]) -> Option<String> {
    let tools = facts.lists.get("tools")?;
    let call = calls.iter().find(|c| {
        !tools
            .iter()
            .any(|t| t.get("name") == Some(&Value::from(c.tool.as_str())))
    })?;
    let names: Vec<&str> = tools
        .iter()
        .filter_map(|t| t.get("name").and_then(Value::as_str))
        .collect();
    Some(format!(
        "--call {:?}: the server lists no such tool (it lists {}): name one of its tools",
        call.tool,
        short(&names.join(", "), 300)
    ))
}

impl Ctx {
    /// When a list still going must stop, to leave the check its verdict:
    /// one wait before its deadline.
    pub fn list_until(&self) -> Instant {
        self.until
            .checked_sub(self.wait)
            .unwrap_or(self.until)
            .max(Instant::now())
    }
}

/// `text` cut to `max` bytes (at a character boundary), with an ellipsis.
pub fn short(text: &str, max: usize) -> String {
    if text.len() <= max {
        text.to_owned()
    } else {
        format!("{}…", &text[..text.floor_char_boundary(max)])
    }
}

/// The error code of a response, if it is an error.
pub fn error_code(reply: &Value) -> Option<i64> {
    reply.get("error")?.get("code")?.as_i64()
}

/// A response, briefly, for a reason.
pub fn said(reply: &Value) -> String {
    match (reply.get("result"), reply.get("error")) {
        (_, Some(error)) => format!("error {}", short(&error.to_string(), 200)),
        (Some(result), _) => format!("result {}", short(&result.to_string(), 200)),
        _ => short(&reply.to_string(), 200),
    }
}

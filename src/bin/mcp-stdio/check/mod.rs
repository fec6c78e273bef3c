//! `mcp-stdio check`: a conformance checker any server author can run.
//!
//! The catalogue is the spec, cited: each check is a plain function with
//! its id, its level (the keyword of the sentence it enforces), the spec
//! page and that sentence, quoted (`--list` prints them; `tests/check.rs`
//! finds every quote in `tests/spec/`). One file per group: `stdio`,
//! `jsonrpc`, `lifecycle`, `schema` (every result against `schema.json`
//! of its era), `tools`, `features` (resources, templates, prompts,
//! completion), `cancel`, `subscriptions`, `legacy`, `http`.
//!
//! How a run goes: `Facts::gather` starts the server once to learn what
//! it speaks and offers (the eras, the capabilities, the lists); then
//! each check runs on a thread of its own with its own deadline, on a
//! session shared with the checks before it (one per era) or on a server
//! of its own when it needs the process itself (its end of input, its
//! signals, its first lines). A check that overruns its deadline is
//! failed, its session killed, and the run goes on.
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
mod features;
mod format;
mod http;
mod jsonrpc;
mod legacy;
mod lifecycle;
mod results;
mod schema;
mod stdio;
mod subscriptions;
mod tools;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub use args::Args;
use driver::{Era, Missing, Session, Target, Transcript};

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
        subscriptions::CHECKS,
        legacy::CHECKS,
        http::CHECKS,
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// What the server speaks and offers, learnt once before the checks.
#[derive(Debug, Default)]
pub struct Facts {
    /// The era most checks speak: modern when the server speaks it.
    pub primary: Option<Era>,
    /// The `server/discover` result, when the server is modern.
    pub discover: Option<Value>,
    /// The `initialize` result, when it speaks the legacy era (and it was
    /// asked: `--era auto` or `legacy`).
    pub initialize: Option<Value>,
    /// Why an era is not spoken, for the skips.
    pub no_modern: Option<String>,
    pub no_legacy: Option<String>,
    /// Every item of each list, in the primary era (`None`: not offered,
    /// or the list failed).
    pub lists: BTreeMap<&'static str, Vec<Value>>,
}

impl Facts {
    /// The capabilities declared in the primary era.
    pub fn capabilities(&self) -> &Value {
        let result = match self.primary {
            Some(Era::Modern) => self.discover.as_ref(),
            _ => self.initialize.as_ref(),
        };
        result
            .and_then(|r| r.get("capabilities"))
            .unwrap_or(&Value::Null)
    }

    /// Whether the server declares the capability `name`.
    pub fn offers(&self, name: &str) -> bool {
        self.capabilities().get(name).is_some_and(|c| !c.is_null())
    }

    /// The items of a list (`tools`, `resources`, `resourceTemplates`,
    /// `prompts`).
    pub fn list(&self, name: &str) -> &[Value] {
        self.lists.get(name).map_or(&[], Vec::as_slice)
    }

    /// A check that needs the modern era: why it is skipped, if it is.
    pub fn need_modern(&self) -> Result<(), Verdict> {
        match &self.no_modern {
            Some(why) => Err(Verdict::Skip(format!("the server is not modern: {why}"))),
            None => Ok(()),
        }
    }

    pub fn need_legacy(&self) -> Result<(), Verdict> {
        match &self.no_legacy {
            Some(why) => Err(Verdict::Skip(format!(
                "the legacy era was not checked: {why}"
            ))),
            None => Ok(()),
        }
    }
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
        Session::connect(&self.target, &self.transcript)
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
            .map_err(|e| Verdict::Fail(format!("{method}: {e}")))
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
    let facts = match Facts::gather(&target, args.era, args.wait) {
        Ok(facts) => facts,
        Err(message) => {
            // It may carry the server's stderr: escaped, on one line.
            eprintln!("mcp-stdio check: {}", crate::escape::line(&message));
            return status::UNREACHABLE;
        }
    };
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

/// Runs each check on a thread of its own, within its deadline; `each`
/// sees each outcome as it comes.
fn run_checks(
    checks: &[&'static Check],
    target: &Target,
    facts: Facts,
    args: &Args,
    mut each: impl FnMut(&Outcome),
) -> Vec<Outcome> {
    let target = Arc::new(target.clone());
    let facts = Arc::new(facts);
    let calls = Arc::new(args.calls.clone());
    let mut shared = BTreeMap::new();
    let mut outcomes = Vec::new();
    for &check in checks {
        let transcript = Transcript::default();
        let ctx = Ctx {
            target: Arc::clone(&target),
            facts: Arc::clone(&facts),
            calls: Arc::clone(&calls),
            wait: args.wait,
            transcript: transcript.clone(),
            shared: std::mem::take(&mut shared),
        };
        // The shared sessions' evidence, reachable if the check never
        // comes back.
        let shared_evidence: Vec<Transcript> =
            ctx.shared.values().map(|(_, t)| t.clone()).collect();
        let began = Instant::now();
        // One slot: the thread's one verdict, never waited on after the
        // deadline.
        let (tx, rx) = crossbeam_channel::bounded(1);
        let spawned = std::thread::Builder::new()
            .name(format!("check {}", check.id))
            .spawn(move || {
                let mut ctx = ctx;
                let verdict = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    (check.run)(&mut ctx)
                }))
                .unwrap_or_else(|_| {
                    Verdict::Fail(
                        "the check itself panicked (a bug of the checker: please report it)".into(),
                    )
                });
                let _ = tx.send((verdict, ctx));
            });
        let (verdict, evidence) = match spawned {
            Err(e) => (
                Verdict::Fail(format!("cannot start a thread: {e}")),
                Vec::new(),
            ),
            Ok(_) => match rx.recv_timeout(args.deadline) {
                Ok((verdict, ctx)) => {
                    let mut evidence = Vec::new();
                    for (_, t) in ctx.shared.values() {
                        evidence.extend(t.take());
                    }
                    evidence.extend(ctx.transcript.take());
                    shared = ctx.shared;
                    (verdict, evidence)
                }
                Err(_) => {
                    // The thread still holds the sessions, and may be
                    // blocked writing to a server that does not read: its
                    // servers are killed (the writes fail, the thread
                    // ends), and the next check starts new ones.
                    let mut evidence = Vec::new();
                    for t in shared_evidence.iter().chain([&transcript]) {
                        t.kill_servers();
                    }
                    for t in &shared_evidence {
                        evidence.extend(t.take());
                    }
                    evidence.extend(transcript.take());
                    (
                        Verdict::Fail(format!(
                            "no verdict within the check's deadline of {:.0} s: the server stopped answering",
                            args.deadline.as_secs_f64()
                        )),
                        evidence,
                    )
                }
            },
        };
        let (status, reason) = match verdict {
            Verdict::Pass(reason) => (Status::Pass, reason),
            Verdict::Skip(reason) => (Status::Skip, reason),
            Verdict::Fail(reason) if check.level == Level::Must => (Status::Fail, reason),
            Verdict::Fail(reason) => (Status::Warn, reason),
        };
        let outcome = Outcome {
            check,
            status,
            reason,
            evidence,
            elapsed: began.elapsed(),
        };
        each(&outcome);
        outcomes.push(outcome);
    }
    outcomes
}

impl Facts {
    /// Starts the server to learn what it speaks and offers: the probe
    /// (`server/discover`), then `initialize` on a server of its own
    /// (unless `--era modern`), then every list the primary era offers.
    /// An error when it speaks neither era: it could not be reached.
    fn gather(target: &Target, era: args::EraChoice, wait: Duration) -> Result<Facts, String> {
        let transcript = Transcript::default();
        let mut facts = Facts::default();
        let mut modern_session = None;
        if era != args::EraChoice::Legacy {
            let mut session = Session::connect(target, &transcript)?;
            match session.call("server/discover", json!({}), wait) {
                Ok(reply) => match reply.get("result") {
                    Some(result) if result.get("supportedVersions").is_some() => {
                        facts.discover = Some(result.clone());
                        modern_session = Some(session);
                    }
                    _ => {
                        let error = reply.get("error").cloned().unwrap_or(Value::Null);
                        facts.no_modern = Some(format!(
                            "it answered server/discover with {}",
                            short(&error.to_string(), 160)
                        ));
                    }
                },
                Err(Missing::Eof) => {
                    facts.no_modern = Some("it exited on server/discover".into());
                }
                Err(e) => facts.no_modern = Some(format!("server/discover: {e}")),
            }
        } else {
            facts.no_modern = Some("--era legacy".into());
        }
        if era != args::EraChoice::Modern {
            match Session::start(target, Era::Legacy, &transcript, wait) {
                Ok(session) => facts.initialize = session.initialize.clone(),
                Err(e) => facts.no_legacy = Some(e),
            }
        } else {
            facts.no_legacy = Some("--era modern".into());
        }
        facts.primary = match (&facts.discover, &facts.initialize) {
            (Some(_), _) => Some(Era::Modern),
            (None, Some(_)) => Some(Era::Legacy),
            (None, None) => {
                let why = [facts.no_modern.as_deref(), facts.no_legacy.as_deref()]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join("; ");
                let stderr = transcript
                    .take()
                    .into_iter()
                    .filter(|e| e.kind == "stderr")
                    .map(|e| e.text)
                    .collect::<Vec<_>>();
                let tail = stderr.len().saturating_sub(3);
                let said = if stderr.is_empty() {
                    String::new()
                } else {
                    format!("; its stderr: {}", stderr[tail..].join(" | "))
                };
                return Err(format!(
                    "the server speaks no MCP era this checker knows: {why}{said}"
                ));
            }
        };
        let mut session = match modern_session {
            Some(session) => session,
            None => Session::start(target, Era::Legacy, &transcript, wait)?,
        };
        for (capability, method, member) in [
            ("tools", "tools/list", "tools"),
            ("resources", "resources/list", "resources"),
            ("resources", "resources/templates/list", "resourceTemplates"),
            ("prompts", "prompts/list", "prompts"),
        ] {
            if facts.offers(capability)
                && let Ok(items) = list_all(&mut session, method, member, wait)
            {
                facts.lists.insert(member, items);
            }
        }
        Ok(facts)
    }
}

/// Every item of a paginated list (at most 100 pages; a repeated cursor
/// ends it with an error).
pub fn list_all(
    session: &mut Session,
    method: &str,
    member: &str,
    wait: Duration,
) -> Result<Vec<Value>, String> {
    let mut items = Vec::new();
    let mut cursor: Option<Value> = None;
    let mut seen = Vec::new();
    for _ in 0..100 {
        let params = match &cursor {
            Some(c) => json!({ "cursor": c }),
            None => json!({}),
        };
        let reply = session
            .call(method, params, wait)
            .map_err(|e| format!("{method}: {e}"))?;
        let Some(result) = reply.get("result") else {
            return Err(format!(
                "{method} answered {}",
                short(&reply.to_string(), 200)
            ));
        };
        let page = result
            .get(member)
            .and_then(Value::as_array)
            .ok_or_else(|| format!("{method}: the result has no {member} array"))?;
        items.extend(page.iter().cloned());
        match result.get("nextCursor") {
            None | Some(Value::Null) => return Ok(items),
            Some(next) => {
                if seen.contains(next) {
                    return Err(format!(
                        "{method}: the cursor {next} came back again (a cycle)"
                    ));
                }
                seen.push(next.clone());
                cursor = Some(next.clone());
            }
        }
    }
    Err(format!("{method}: more than 100 pages"))
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

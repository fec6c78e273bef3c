//! `mcp-stdio check`'s command line: its options, then the server after
//! `--` (or `--url`).

use std::time::Duration;

use serde_json::Value;

use super::driver::Target;
use super::{Call, Check};

/// What `mcp-stdio check --help` prints.
pub const HELP: &str = "\
mcp-stdio check: check a server against the MCP spec (2026-07-28 and 2025-11-25)

usage: mcp-stdio check [OPTIONS] -- SERVER [SERVER ARGS...]
       mcp-stdio check [OPTIONS] --url http://HOST:PORT/mcp [--header 'Name: value']...
       mcp-stdio check --list [--format text|markdown|json] [--only IDS] [--skip IDS]

Runs each check of the catalogue (--list prints it: each check's id, level,
spec page and the sentence it enforces) and prints one line per check:
pass, fail (a MUST broken), warn (a SHOULD or MAY not followed) or skip (the
server does not offer what the check needs), with a one-line reason; then a
summary.

options:
  --format text|json|junit|markdown
                      text (default); json: one object a line per check, with
                      its evidence (the lines sent and received), then the
                      summary; junit: a JUnit XML report for CI; markdown:
                      for --list, the catalogue as a table
  --only IDS          run only these checks: ids or groups, comma-separated
                      (repeatable): --only stdio,jsonrpc.id-types
  --skip IDS          leave these out (same form)
  --era auto|modern|legacy
                      auto (default): the modern era if the server speaks it,
                      and the legacy era's own checks if it speaks that too;
                      modern or legacy: that era alone
  --call TOOL[=JSON]  the checks may call TOOL, with these arguments (default
                      {}); without it no tool is ever called with arguments
                      its schema accepts (repeatable)
  --wait SECS         how long to wait for one answer (default 5; a server
                      process's first answer, 15 at least: it may be starting)
  --deadline SECS     how long one check may take in all (default 20); once
                      three checks in a row heard nothing from the server and
                      a new server does not answer its handshake, the rest
                      are skipped (\"not run: the server stopped answering\")
  --header 'NAME: VALUE'
                      send this header to an HTTP server (repeatable)
  --list              print the catalogue instead of running it
  -h, --help          this help

Safe by default: a check sends lists, reads of the resources and prompts the
server lists, completions, and requests the server must refuse (unknown
names; arguments a tool's schema refuses: to a read-only tool, a member of
the wrong type or a required one left out; to any other tool, no arguments
when it requires one). Left out without --call: the result of
a successful tool call (tools.call-result: the first --call that answers with
a complete result), cancelling a call in flight (cancel.no-reply-after-cancel:
the first --call still running after 300 ms, slow enough to cancel:
--call 'slow={\"ms\":3000}'), multi round-trip
requests (mrtr.*: the first --call that answers input_required) and tasks
(tasks.created-resolves, tasks.no-task-undeclared: the first --call that
answers with a task when the client declares the Tasks extension). Each of
these checks calls the tool afresh, and every --call named before it too (in
the order given): a tool named with --call may be called up to eight times in
a run (--only keeps the checks you want it called by).

exit status: 0 no MUST failed, 1 a MUST failed, 2 the server could not be
started or reached (or the command line was wrong).
";

/// `--era`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EraChoice {
    #[default]
    Auto,
    Modern,
    Legacy,
}

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Text,
    Json,
    Junit,
    Markdown,
}

/// Everything `check`'s command line says.
#[derive(Debug, Clone)]
pub struct Args {
    pub target: Option<Target>,
    pub format: Format,
    pub only: Vec<String>,
    pub skip: Vec<String>,
    pub era: EraChoice,
    pub calls: Vec<Call>,
    pub wait: Duration,
    pub deadline: Duration,
    pub list: bool,
    pub help: bool,
}

impl Args {
    /// Parses the arguments after `check`.
    pub fn parse(argv: Vec<String>) -> Result<Args, String> {
        let (before, server) = match argv.iter().position(|a| a == "--") {
            Some(at) => (argv[..at].to_vec(), Some(argv[at + 1..].to_vec())),
            None => (argv, None),
        };
        let mut args = Args {
            target: None,
            format: Format::Text,
            only: Vec::new(),
            skip: Vec::new(),
            era: EraChoice::Auto,
            calls: Vec::new(),
            wait: Duration::from_secs(5),
            deadline: Duration::from_secs(20),
            list: false,
            help: false,
        };
        let mut url = None;
        let mut headers = Vec::new();
        let mut iter = before.into_iter();
        while let Some(arg) = iter.next() {
            let (name, inline) = match arg.split_once('=') {
                Some((name, value)) if name.starts_with("--") => {
                    (name.to_owned(), Some(value.to_owned()))
                }
                _ => (arg.clone(), None),
            };
            let mut value = || {
                inline
                    .clone()
                    .or_else(|| iter.next())
                    .ok_or_else(|| format!("{name} needs a value"))
            };
            match name.as_str() {
                "-h" | "--help" => args.help = true,
                "--list" => args.list = true,
                "--format" => {
                    args.format = match value()?.as_str() {
                        "text" => Format::Text,
                        "json" => Format::Json,
                        "junit" => Format::Junit,
                        "markdown" => Format::Markdown,
                        other => {
                            return Err(format!(
                                "--format takes text, json, junit or markdown, not {other:?}"
                            ));
                        }
                    }
                }
                "--only" => args.only.extend(ids(&value()?)),
                "--skip" => args.skip.extend(ids(&value()?)),
                "--era" => {
                    args.era = match value()?.as_str() {
                        "auto" => EraChoice::Auto,
                        "modern" => EraChoice::Modern,
                        "legacy" => EraChoice::Legacy,
                        other => {
                            return Err(format!(
                                "--era takes auto, modern or legacy, not {other:?}"
                            ));
                        }
                    }
                }
                "--call" => args.calls.push(call(&value()?)?),
                "--wait" => args.wait = seconds("--wait", &value()?)?,
                "--deadline" => args.deadline = seconds("--deadline", &value()?)?,
                "--url" => url = Some(value()?),
                "--header" | "-H" => {
                    let text = value()?;
                    let Some((n, v)) = text.split_once(':') else {
                        return Err(format!("--header takes 'Name: value', not {text:?}"));
                    };
                    headers.push((n.trim().to_owned(), v.trim().to_owned()));
                }
                other => {
                    return Err(format!(
                        "unknown option {other} (try mcp-stdio check --help)"
                    ));
                }
            }
        }
        for id in args.only.iter().chain(&args.skip) {
            if !super::catalogue()
                .iter()
                .any(|c| c.id == id || c.group() == id)
            {
                return Err(format!(
                    "no check or group is called {id:?} (mcp-stdio check --list names them)"
                ));
            }
        }
        if args.format == Format::Markdown && !args.list {
            return Err("--format markdown is for --list".into());
        }
        if args.format == Format::Junit && args.list {
            return Err(
                "--format junit is for a run's report; --list prints text, json or markdown".into(),
            );
        }
        args.target = match (url, server) {
            (Some(_), Some(_)) => {
                return Err("give the server after -- or with --url, not both".into());
            }
            (Some(url), None) => Some(Target::Url(url, headers)),
            (None, Some(argv)) if argv.is_empty() => {
                return Err("no server command after --".into());
            }
            (None, Some(argv)) => Some(Target::Command(argv)),
            (None, None) => None,
        };
        Ok(args)
    }

    /// Whether `check` is to run: named by `--only` (or no `--only`), and
    /// not by `--skip`.
    pub fn selects(&self, check: &Check) -> bool {
        let named = |ids: &[String]| ids.iter().any(|id| id == check.id || id == check.group());
        (self.only.is_empty() || named(&self.only)) && !named(&self.skip)
    }
}

fn ids(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `TOOL` or `TOOL=JSON` (a JSON object).
fn call(text: &str) -> Result<Call, String> {
    let (tool, arguments) = match text.split_once('=') {
        None => (text, Value::Object(Default::default())),
        Some((tool, json)) => {
            let arguments: Value = serde_json::from_str(json)
                .map_err(|e| format!("--call {tool}=JSON: the arguments are not JSON: {e}"))?;
            if !arguments.is_object() {
                return Err(format!(
                    "--call {tool}=JSON: the arguments must be a JSON object"
                ));
            }
            (tool, arguments)
        }
    };
    if tool.is_empty() {
        return Err("--call needs a tool name".into());
    }
    Ok(Call {
        tool: tool.to_owned(),
        arguments,
    })
}

fn seconds(name: &str, text: &str) -> Result<Duration, String> {
    text.parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s < 3600.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("{name} takes a number of seconds above 0, not {text:?}"))
}

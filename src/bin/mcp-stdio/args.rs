//! The command line, parsed by hand: the command and its arguments, the
//! options, and the server (after `--`, or `--config FILE --server NAME`).
//!
//! Why by hand: the grammar is small (one command, a dozen options, the
//! server after `--`), and a parser crate would cost more build time and
//! binary size than these few hundred lines. Options may come anywhere
//! before `--`, as `--name VALUE` or `--name=VALUE`; everything after `--`
//! is the server's command line, untouched.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use mcp_stdio::EraPolicy;
use mcp_stdio::types::{LoggingLevel, SubscriptionFilter};
use serde_json::Value;

mod checks;
mod command;
mod oauth;
mod pairs;

// `serve-http` keeps the token out of its child's environment.
#[cfg(all(feature = "server", feature = "http"))]
pub use checks::BEARER_TOKEN_ENV;
pub use checks::{cacert_for_stdio, check_url, header_for_stdio};
use checks::{check_applies, era, header, log_level, max_body_bytes, timeout};
use command::command;
pub use oauth::OAuth;
#[cfg(all(feature = "server", feature = "http"))]
pub use oauth::{INTROSPECT_CREDENTIALS_ENV, Tokens};
use pairs::pair;
pub use pairs::{Arguments, tool_arguments};

/// What to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// `info`: the era, the server's identity, capabilities and counts.
    Info,
    /// `tools`, `resources`, `templates`, `prompts`: every item of a list.
    List(List),
    /// `call TOOL [ARGS]`.
    Call { tool: String, arguments: Arguments },
    /// `read URI`.
    Read { uri: String },
    /// `prompt NAME [key=value...]`.
    Prompt {
        name: String,
        arguments: BTreeMap<String, String>,
    },
    /// `complete (prompt NAME | resource TEMPLATE) ARG VALUE [key=value...]`.
    Complete {
        reference: Value,
        argument: String,
        value: String,
        context: BTreeMap<String, String>,
    },
    /// `listen [--tools] [--prompts] [--resources] [--resource URI]...`.
    Listen(SubscriptionFilter),
    /// `serve-http [--listen ADDR] [--allow-origin O]... [--allow-host H]...
    /// [--max-body-bytes N] [--bearer-token T | --authorization-server URL
    /// ...]`: the server over HTTP.
    ServeHttp(ServeHttp),
    /// `login`: authorize with the `--url` server (OAuth) and keep the
    /// tokens.
    Login,
    /// `logout`: forget the tokens kept for the `--url` server.
    Logout,
    /// `help`, `--help`, `-h`.
    Help,
    /// `--version`, `-V`.
    Version,
}

/// What `serve-http` listens on and lets in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeHttp {
    /// `--listen ADDR` (default `127.0.0.1:8080`).
    pub listen: String,
    /// `--allow-origin ORIGIN`, repeatable.
    pub allow_origins: Vec<String>,
    /// `--allow-host HOST`, repeatable.
    pub allow_hosts: Vec<String>,
    /// `--max-body-bytes N`.
    pub max_body_bytes: Option<usize>,
    /// `--bearer-token TOKEN`: every request must carry it.
    pub bearer_token: Option<String>,
    /// Said before serving: `--bearer-token-file` (or `--token-file`,
    /// `--introspect-credentials`) can be read by others.
    pub token_file_warning: Option<String>,
    /// `--authorization-server URL`...: an OAuth 2.1 protected resource.
    pub oauth: Option<OAuth>,
}

/// The four lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum List {
    Tools,
    Resources,
    Templates,
    Prompts,
}

impl List {
    /// The list method, and the member of its result that holds the items.
    pub fn method(self) -> (&'static str, &'static str) {
        match self {
            List::Tools => ("tools/list", "tools"),
            List::Resources => ("resources/list", "resources"),
            List::Templates => ("resources/templates/list", "resourceTemplates"),
            List::Prompts => ("prompts/list", "prompts"),
        }
    }
}

/// Where the server comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerSpec {
    /// The command line after `--`.
    Argv(Vec<String>),
    /// An entry of an `mcpServers` (or VS Code `servers`) file.
    Config { file: PathBuf, name: Option<String> },
    /// `--url URL`: a Streamable HTTP server.
    Url(String),
}

/// Everything the command line says.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub command: Command,
    /// `None` only for `help` and `--version`.
    pub server: Option<ServerSpec>,
    pub json: bool,
    /// `--raw`: the server's text as it came, even on a terminal.
    pub raw: bool,
    pub wire: bool,
    pub era: EraPolicy,
    pub timeout: Option<Duration>,
    pub log_level: Option<LoggingLevel>,
    /// `--answer key=value`, in order (a later one wins).
    pub answers: BTreeMap<String, String>,
    pub decline: bool,
    /// `--interactive`: ask on stdin even when it is not a terminal.
    pub interactive: bool,
    pub roots: Vec<PathBuf>,
    pub sampling_reply: Option<String>,
    pub long: bool,
    pub save: Option<PathBuf>,
    pub show_stderr: bool,
    /// `--header 'Name: value'`, in order: sent to an HTTP server.
    pub headers: Vec<(String, String)>,
    /// `--cacert FILE`, in order: CA certificates trusted for an
    /// `https://` server (and its authorization server), besides the
    /// system's.
    pub cacerts: Vec<PathBuf>,
}

/// A mistake on the command line: one line saying what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

fn usage(message: impl Into<String>) -> UsageError {
    UsageError(message.into())
}

/// What `--help` prints.
pub const HELP: &str = include_str!("help.txt");

/// Parses the arguments after the program name.
pub fn parse(args: Vec<String>) -> Result<Options, UsageError> {
    let (before, server) = match args.iter().position(|a| a == "--") {
        Some(at) => (args[..at].to_vec(), Some(args[at + 1..].to_vec())),
        None => (args, None),
    };
    let mut flags = Flags::default();
    let mut positional = Vec::new();
    let mut iter = before.into_iter();
    while let Some(arg) = iter.next() {
        if arg.len() > 1 && arg.starts_with('-') {
            flags.take(&arg, &mut iter)?;
        } else {
            positional.push(arg);
        }
    }
    if flags.help {
        return Ok(flags.into_options(Command::Help, None));
    }
    if flags.version {
        return Ok(flags.into_options(Command::Version, None));
    }
    let mut positional = positional.into_iter();
    let command = match positional.next() {
        None => return Err(usage("no command given (try mcp-stdio --help)")),
        Some(name) => command(&name, positional.collect(), &flags)?,
    };
    if command == Command::Help {
        return Ok(flags.into_options(Command::Help, None));
    }
    check_applies(&command, &flags)?;
    if matches!(command, Command::Login | Command::Logout) && flags.url.is_none() {
        return Err(usage(
            "login and logout are for a server given with --url (mcp-stdio --url https://HOST/mcp login)",
        ));
    }
    if let Some(url) = flags.url.clone() {
        check_url(&url, "--url")?;
        if server.is_some() || flags.config.is_some() {
            return Err(usage(
                "give the server with --url, after --, or with --config: one of them",
            ));
        }
        return Ok(flags.into_options(command, Some(ServerSpec::Url(url))));
    }
    let server = match (server, flags.config.clone(), flags.server.clone()) {
        (Some(_), None, None) if !flags.headers.is_empty() => return Err(header_for_stdio()),
        (Some(_), None, None) if !flags.cacerts.is_empty() => return Err(cacert_for_stdio()),
        (Some(argv), None, None) if !argv.is_empty() => ServerSpec::Argv(argv),
        (Some(_), None, None) => return Err(usage("no server command after --")),
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            return Err(usage("give the server after -- or with --config, not both"));
        }
        (None, Some(file), name) => ServerSpec::Config { file, name },
        (None, None, Some(_)) => return Err(usage("--server needs --config FILE")),
        (None, None, None) => {
            return Err(usage(
                "no server: give its command after -- (mcp-stdio tools -- python -m my_server), --url http://HOST:PORT/mcp, or --config FILE --server NAME",
            ));
        }
    };
    Ok(flags.into_options(command, Some(server)))
}

/// Every option, for "did you mean".
const OPTIONS: &[&str] = &[
    "--help",
    "--version",
    "--json",
    "--raw",
    "--wire",
    "--decline",
    "--interactive",
    "--long",
    "--show-stderr",
    "--tools",
    "--prompts",
    "--resources",
    "--era",
    "--timeout",
    "--log-level",
    "--answer",
    "--roots",
    "--sampling-reply",
    "--save",
    "--config",
    "--server",
    "--url",
    "--header",
    "--cacert",
    "--resource",
    "--listen",
    "--allow-origin",
    "--allow-host",
    "--max-body-bytes",
    "--bearer-token",
    "--bearer-token-file",
    "--authorization-server",
    "--oauth-resource",
    "--scope",
    "--token-file",
    "--introspect",
    "--introspect-credentials",
];

/// The options, as they are read.
#[derive(Default)]
struct Flags {
    help: bool,
    version: bool,
    json: bool,
    raw: bool,
    wire: bool,
    era: EraPolicy,
    timeout: Option<Duration>,
    log_level: Option<LoggingLevel>,
    answers: BTreeMap<String, String>,
    decline: bool,
    interactive: bool,
    roots: Vec<PathBuf>,
    sampling_reply: Option<String>,
    long: bool,
    save: Option<PathBuf>,
    show_stderr: bool,
    config: Option<PathBuf>,
    server: Option<String>,
    url: Option<String>,
    headers: Vec<(String, String)>,
    cacerts: Vec<PathBuf>,
    tools: bool,
    prompts: bool,
    resources: bool,
    resource: Vec<String>,
    listen: Option<String>,
    allow_origins: Vec<String>,
    allow_hosts: Vec<String>,
    max_body_bytes: Option<usize>,
    bearer_token: Option<String>,
    bearer_token_file: Option<PathBuf>,
    authorization_servers: Vec<String>,
    oauth_resource: Option<String>,
    scopes: Vec<String>,
    token_file: Option<PathBuf>,
    introspect: Option<String>,
    introspect_credentials: Option<PathBuf>,
}

impl Flags {
    /// Takes one option (and its value, from `--name=value` or the next
    /// argument).
    fn take(
        &mut self,
        arg: &str,
        rest: &mut impl Iterator<Item = String>,
    ) -> Result<(), UsageError> {
        let (name, inline) = match arg.split_once('=') {
            Some((name, value)) if name.starts_with("--") => (name, Some(value.to_owned())),
            _ => (arg, None),
        };
        if self.flag(name) {
            return Ok(());
        }
        // Taken only by an option that has a value: an unknown one is
        // refused as unknown.
        let value = || {
            inline
                .or_else(|| rest.next())
                .ok_or_else(|| usage(format!("{name} needs a value")))
        };
        self.valued(name, value)
    }

    /// An option without a value: whether `name` is one (and it is set).
    fn flag(&mut self, name: &str) -> bool {
        let flag = match name {
            "-h" | "--help" => &mut self.help,
            "-V" | "--version" => &mut self.version,
            "--json" => &mut self.json,
            "--raw" => &mut self.raw,
            "--wire" => &mut self.wire,
            "--decline" => &mut self.decline,
            "--interactive" => &mut self.interactive,
            "--long" => &mut self.long,
            "--show-stderr" => &mut self.show_stderr,
            "--tools" => &mut self.tools,
            "--prompts" => &mut self.prompts,
            "--resources" => &mut self.resources,
            _ => return false,
        };
        *flag = true;
        true
    }

    /// An option with a value (read by `value`), or why it is refused.
    fn valued(
        &mut self,
        name: &str,
        value: impl FnOnce() -> Result<String, UsageError>,
    ) -> Result<(), UsageError> {
        match name {
            "--era" => self.era = era(&value()?)?,
            "--timeout" => self.timeout = Some(timeout(&value()?)?),
            "--log-level" => self.log_level = Some(log_level(&value()?)?),
            "--answer" => {
                let (key, answer) = pair(&value()?, "--answer")?;
                self.answers.insert(key, answer);
            }
            "--roots" | "--root" => self.roots.push(PathBuf::from(value()?)),
            "--sampling-reply" => self.sampling_reply = Some(value()?),
            "--save" => self.save = Some(PathBuf::from(value()?)),
            "--config" => self.config = Some(PathBuf::from(value()?)),
            "--server" => self.server = Some(value()?),
            "--url" => self.url = Some(value()?),
            "--header" | "-H" => self.headers.push(header(&value()?)?),
            "--cacert" => self.cacerts.push(PathBuf::from(value()?)),
            "--resource" => self.resource.push(value()?),
            "--listen" => self.listen = Some(value()?),
            "--allow-origin" => self.allow_origins.push(value()?),
            "--allow-host" => self.allow_hosts.push(value()?),
            "--max-body-bytes" => self.max_body_bytes = Some(max_body_bytes(&value()?)?),
            "--bearer-token" => self.bearer_token = Some(value()?),
            "--bearer-token-file" => self.bearer_token_file = Some(PathBuf::from(value()?)),
            "--authorization-server" => self.authorization_servers.push(value()?),
            "--oauth-resource" => self.oauth_resource = Some(value()?),
            "--scope" => self.scopes.push(value()?),
            "--token-file" => self.token_file = Some(PathBuf::from(value()?)),
            "--introspect" => self.introspect = Some(value()?),
            "--introspect-credentials" => {
                self.introspect_credentials = Some(PathBuf::from(value()?));
            }
            _ => {
                let hint = crate::suggest::typo(name, OPTIONS.iter().copied())
                    .unwrap_or_else(|| " (try mcp-stdio --help)".to_owned());
                return Err(usage(format!("unknown option {name}{hint}")));
            }
        }
        Ok(())
    }

    fn into_options(self, command: Command, server: Option<ServerSpec>) -> Options {
        Options {
            command,
            server,
            json: self.json,
            raw: self.raw,
            wire: self.wire,
            era: self.era,
            timeout: self.timeout,
            log_level: self.log_level,
            answers: self.answers,
            decline: self.decline,
            interactive: self.interactive,
            roots: self.roots,
            sampling_reply: self.sampling_reply,
            long: self.long,
            save: self.save,
            show_stderr: self.show_stderr,
            headers: self.headers,
            cacerts: self.cacerts,
        }
    }
}

#[cfg(test)]
mod tests;

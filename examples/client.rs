//! Connects to any stdio MCP server and prints what it offers: its era,
//! identity, tools, resources, templates and prompts, one item a line.
//! Works against modern servers and legacy (initialize-era) ones alike.
//!
//! ```text
//! cargo run --example client -- cargo run -q --example everything
//! cargo run --example client -- npx -y @modelcontextprotocol/server-everything
//! ```
//!
//! A list the server does not serve (it answers `-32601`, as many do for
//! `resources/templates/list`) is shown as "not served" and the rest is
//! still printed. Anything else that fails is one line on stderr and a
//! non-zero exit status; a server that dies (while starting, or later) is
//! reported once, with its exit status and the last lines of its stderr,
//! and nothing more is listed.

use std::io::Write;
use std::process::{Command, ExitCode};
use std::sync::mpsc;
use std::time::Duration;

use mcp_stdio::{Client, Era, Error, error_code};

/// Public for the client tests, which run it as a process of their own.
pub fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((program, rest)) = args.split_first() else {
        eprintln!("usage: client <server command> [args...]");
        return ExitCode::from(2);
    };
    let mut command = Command::new(program);
    command.args(rest);
    let mut out = std::io::stdout().lock();
    // stderr is not locked for the run, only line by line: the client's
    // notes about a misbehaving server go there too, from a thread of
    // their own.
    ExitCode::from(run(command, &mut out, &mut std::io::stderr()))
}

/// Prints what the server started by `command` offers to `out`, and every
/// failure as one line to `err`. Returns the exit status: 0 when everything
/// could be printed, 1 otherwise.
pub fn run(command: Command, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    // The client's problems go to stderr, a line each, but its note on a
    // server that died is kept for the failure that death causes, whose
    // one line then says how (the client keeps the server's last stderr
    // lines for that note, and for a start-up error).
    let (death_tx, deaths) = mpsc::channel();
    let client = Client::builder().trace_problems(move |note: &str| {
        let death = ["the server exited", "the server closed its output"];
        if death.iter().any(|d| note.starts_with(d)) {
            let _ = death_tx.send(note.to_owned());
        } else {
            eprintln!("mcp-stdio client: {note}");
        }
    });
    let client = match client.spawn(command) {
        Ok(client) => client,
        Err(e) => {
            let _ = writeln!(err, "client: {e}");
            return 1;
        }
    };
    let _ = print_server(&client, out);
    let caps = client.server_capabilities();
    let (c, has_resources) = (&client, caps.resources.is_some());
    let lists: [List<'_>; 4] = [
        ("tools", "tools/list", caps.tools.is_some(), &|| {
            c.tools()
                .map(|t| t.map(|t| (t.name, t.description)))
                .collect()
        }),
        ("resources", "resources/list", has_resources, &|| {
            c.resources()
                .map(|r| r.map(|r| (r.uri, r.description.or(Some(r.name)))))
                .collect()
        }),
        (
            "resource templates",
            "resources/templates/list",
            has_resources,
            &|| {
                let items = c.resource_templates();
                items
                    .map(|t| t.map(|t| (t.uri_template, t.description.or(Some(t.name)))))
                    .collect()
            },
        ),
        ("prompts", "prompts/list", caps.prompts.is_some(), &|| {
            c.prompts()
                .map(|p| p.map(|p| (p.name, p.description)))
                .collect()
        }),
    ];
    let mut failed = false;
    for (title, method, _, items) in lists.into_iter().filter(|list| list.2) {
        let _ = writeln!(out, "{title}:");
        let (why, gone) = match print_list(items().into_iter(), out) {
            Ok(()) => continue,
            Err(Error::Disconnected) => {
                let note = deaths.recv_timeout(Duration::from_secs(2));
                (
                    note.unwrap_or_else(|_| Error::Disconnected.to_string()),
                    true,
                )
            }
            Err(e) => (e.to_string(), false),
        };
        failed = true;
        let _ = writeln!(err, "client: {method}: {why}");
        // The server is gone: its one line said how; nothing more can be
        // listed.
        if gone {
            break;
        }
    }
    match client.close() {
        Ok(Some(status)) => {
            let _ = writeln!(out, "server exited: {status}");
        }
        Ok(None) => {}
        Err(e) => {
            let _ = writeln!(err, "client: closing the server: {e}");
            failed = true;
        }
    }
    u8::from(failed)
}

/// One item of a list: its name and description.
type Listed = Result<(String, Option<String>), Error>;
/// A list: its title, its method, whether the server offers it, its items.
type List<'a> = (&'a str, &'a str, bool, &'a dyn Fn() -> Vec<Listed>);

/// The era, identity, instructions and capabilities.
fn print_server(client: &Client, out: &mut dyn Write) -> std::io::Result<()> {
    match client.era() {
        Era::Modern { version } => writeln!(out, "era: modern ({version})")?,
        Era::Legacy { version } => writeln!(out, "era: legacy ({version}, initialize)")?,
    }
    if let Some(info) = client.server_info() {
        writeln!(out, "server: {} {}", info.name, info.version)?;
    }
    if let Some(instructions) = client.instructions() {
        writeln!(out, "instructions: {}", first_line(&instructions))?;
    }
    let caps = serde_json::to_value(client.server_capabilities()).unwrap_or_default();
    let names: Vec<&str> = caps
        .as_object()
        .map(|caps| caps.keys().map(String::as_str).collect())
        .unwrap_or_default();
    writeln!(out, "capabilities: {}", names.join(", "))
}

/// Prints one item a line: its name and the first line of its description.
/// A list the server does not serve (`-32601`) is one line saying so.
fn print_list(items: impl Iterator<Item = Listed>, out: &mut dyn Write) -> Result<(), Error> {
    let mut items = items.peekable();
    if items.peek().is_none() {
        let _ = writeln!(out, "  (none)");
    }
    for item in items {
        let (name, description) = match item {
            Ok(item) => item,
            Err(Error::Rpc(e)) if e.code == error_code::METHOD_NOT_FOUND => {
                let _ = writeln!(out, "  (not served: {})", e.message);
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        let _ = match description.as_deref().map(first_line) {
            Some(text) if !text.is_empty() => writeln!(out, "  {name} - {text}"),
            _ => writeln!(out, "  {name}"),
        };
    }
    Ok(())
}

fn first_line(text: &str) -> &str {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
}

//! The commands that read what a server offers: `info`, and the four lists
//! (`tools`, `resources`, `templates`, `prompts`), typed for people and raw
//! for `--json`.

use std::collections::BTreeMap;

use mcp_stdio::{Era, Error, error_code};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::Ctx;
use crate::Failure;
use crate::args::List;
use crate::output::{self, print};

pub fn info(ctx: &Ctx<'_>) -> Result<u8, Failure> {
    let client = ctx.client;
    let caps = serde_json::to_value(client.server_capabilities()).unwrap_or_default();
    let has = |name: &str| caps.get(name).is_some();
    let count = |served: bool, pages: &mut dyn Iterator<Item = Result<(), Error>>, what: &str| {
        if !served {
            return Ok(Value::Null);
        }
        let mut n = 0u64;
        for item in pages {
            match item {
                Ok(()) => n += 1,
                Err(Error::Rpc(e)) if e.code == error_code::METHOD_NOT_FOUND => {
                    return Ok(Value::Null);
                }
                Err(e) => return Err(ctx.failure(e, what)),
            }
        }
        Ok(Value::from(n))
    };
    let tools = count(
        has("tools"),
        &mut client.tools().map(|r| r.map(drop)),
        "tools/list",
    )?;
    let resources = count(
        has("resources"),
        &mut client.resources().map(|r| r.map(drop)),
        "resources/list",
    )?;
    let templates = count(
        has("resources"),
        &mut client.resource_templates().map(|r| r.map(drop)),
        "resources/templates/list",
    )?;
    let prompts = count(
        has("prompts"),
        &mut client.prompts().map(|r| r.map(drop)),
        "prompts/list",
    )?;
    let (era, version) = match client.era() {
        Era::Modern { version } => ("modern", version),
        Era::Legacy { version } => ("legacy", version),
    };
    let server = client.server_info();
    if ctx.opts.json {
        let summary = json!({
            "era": era,
            "protocolVersion": version,
            "serverInfo": server,
            "instructions": client.instructions(),
            "capabilities": caps,
            "tools": tools,
            "resources": resources,
            "resourceTemplates": templates,
            "prompts": prompts,
        });
        print(&summary.to_string());
        return Ok(0);
    }
    let mut out = String::new();
    let mut line = |label: &str, text: &str| {
        out.push_str(&format!("{label:<14}{text}\n"));
    };
    let how = match client.legacy_reason() {
        // Why the probe found it legacy: its answer, or its silence.
        Some(reason) => format!(", initialize: {}", crate::escape::line(&reason)),
        None if era == "legacy" => ", initialize".to_owned(),
        None => String::new(),
    };
    line("era:", &format!("{era} ({version}{how})"));
    if let Some(server) = &server {
        let title = server
            .title
            .as_deref()
            .map_or(String::new(), |t| format!(" ({t})"));
        let text = format!("{} {}{title}", server.name, server.version);
        line("server:", &crate::escape::line(&text));
    }
    if let Some(instructions) = client.instructions() {
        let mut lines = instructions.lines();
        line("instructions:", lines.next().unwrap_or(""));
        for more in lines {
            line("", more);
        }
    }
    line("capabilities:", &output::capabilities(&caps));
    let shown = |n: &Value| match n {
        Value::Null => "not served".to_owned(),
        n => n.to_string(),
    };
    line("tools:", &shown(&tools));
    line("resources:", &shown(&resources));
    line("templates:", &shown(&templates));
    line("prompts:", &shown(&prompts));
    print(&out);
    Ok(0)
}

/// The names of a list's items (`None` if the list cannot be read).
pub fn names(ctx: &Ctx<'_>, list: List) -> Option<Vec<String>> {
    let client = ctx.client;
    let names: Result<Vec<String>, Error> = match list {
        List::Tools => client.tools().map(|t| t.map(|t| t.name)).collect(),
        List::Prompts => client.prompts().map(|p| p.map(|p| p.name)).collect(),
        List::Resources => client.resources().map(|r| r.map(|r| r.uri)).collect(),
        List::Templates => client
            .resource_templates()
            .map(|t| t.map(|t| t.uri_template))
            .collect(),
    };
    names.ok()
}

pub fn list_items(ctx: &Ctx<'_>, list: List) -> Result<u8, Failure> {
    let (method, _) = list.method();
    if ctx.opts.json {
        return match raw_pages(ctx, list, |item| print(item.get())) {
            Err(Error::Rpc(e)) if e.code == error_code::METHOD_NOT_FOUND => Ok(0),
            res => res.map(|()| 0).map_err(|e| ctx.failure(e, method)),
        };
    }
    let client = ctx.client;
    let long = ctx.opts.long;
    // (name, description, long form) of every item: the names are padded
    // to the longest, so every page is read before the first line.
    let items: Result<Vec<(String, Option<String>, String)>, Error> = match list {
        List::Tools => client
            .tools()
            .map(|t| {
                t.map(|t| {
                    (
                        t.name.clone(),
                        t.description.clone(),
                        long_form(long, || output::tool_long(&t)),
                    )
                })
            })
            .collect(),
        List::Resources => client
            .resources()
            .map(|r| {
                r.map(|r| {
                    let description = r.description.clone().or_else(|| Some(r.name.clone()));
                    (
                        r.uri.clone(),
                        description,
                        long_form(long, || output::resource_long(&r)),
                    )
                })
            })
            .collect(),
        List::Templates => client
            .resource_templates()
            .map(|t| {
                t.map(|t| {
                    let description = t.description.clone().or_else(|| Some(t.name.clone()));
                    (
                        t.uri_template.clone(),
                        description,
                        long_form(long, || output::template_long(&t)),
                    )
                })
            })
            .collect(),
        List::Prompts => client
            .prompts()
            .map(|p| {
                p.map(|p| {
                    (
                        p.name.clone(),
                        p.description.clone(),
                        long_form(long, || output::prompt_long(&p)),
                    )
                })
            })
            .collect(),
    };
    let items = match items {
        Ok(items) => items,
        Err(Error::Rpc(e)) if e.code == error_code::METHOD_NOT_FOUND => {
            ctx.stderr
                .line(&format!("the server does not serve {method} ({e})"));
            return Ok(0);
        }
        Err(e) => return Err(ctx.failure(e, method)),
    };
    let width = items
        .iter()
        .map(|(n, ..)| crate::escape::line(n).chars().count())
        .max()
        .unwrap_or(0)
        .min(40);
    for (name, description, long_text) in &items {
        let text = if long {
            long_text.clone()
        } else {
            output::item_line(name, description.as_deref(), width)
        };
        if !print(&text) {
            break;
        }
    }
    Ok(0)
}

fn long_form(long: bool, make: impl FnOnce() -> String) -> String {
    if long { make() } else { String::new() }
}

/// Every item of a list as the server sent it, page by page (`--json`).
fn raw_pages(
    ctx: &Ctx<'_>,
    list: List,
    mut each: impl FnMut(&RawValue) -> bool,
) -> Result<(), Error> {
    /// As `ClientBuilder::max_pages` bounds the typed iterators.
    const MAX_PAGES: usize = 1000;
    let (method, key) = list.method();
    let mut cursor: Option<String> = None;
    let mut seen = std::collections::HashSet::new();
    for _ in 0..MAX_PAGES {
        let params = match &cursor {
            Some(cursor) => json!({ "cursor": cursor }),
            None => json!({}),
        };
        let page = ctx.send(method, params, false)?;
        let mut members: BTreeMap<String, Box<RawValue>> = serde_json::from_str(page.get())?;
        let items: Vec<Box<RawValue>> = match members.remove(key) {
            Some(items) => serde_json::from_str(items.get())?,
            None => {
                return Err(Error::Protocol(format!(
                    "the {method} result has no {key:?}"
                )));
            }
        };
        for item in &items {
            if !each(item) {
                return Ok(());
            }
        }
        cursor = match members.remove("nextCursor") {
            Some(next) => match serde_json::from_str::<Option<String>>(next.get())? {
                Some(next) if !seen.insert(next.clone()) => {
                    return Err(Error::Protocol(format!(
                        "{method} returned a cursor it had returned before: the pages form a cycle"
                    )));
                }
                next => next,
            },
            None => None,
        };
        if cursor.is_none() {
            return Ok(());
        }
    }
    Err(Error::Protocol(format!(
        "{method} still had more after {MAX_PAGES} pages"
    )))
}

//! What each command does with the client.
//!
//! Results go to stdout: for people through `output`, with `--json` as the
//! server sent them (`Client::request_outcome` keeps them raw; the list
//! commands page with it too, so that every item is printed byte for byte).
//! Everything else (progress, logs, questions, errors) goes to stderr.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::Receiver;
use mcp_stdio::types::{
    CallToolResult, CompleteResult, GetPromptResult, InputRequest, InputRequiredResult,
    ReadResourceResult, SubscriptionFilter,
};
use mcp_stdio::{
    Client, Era, Error, Outcome, RequestOptions, SubscriptionEnd, SubscriptionEvent, error_code,
};
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::args::{Command, List, Options};
use crate::ask::Asker;
use crate::output::{self, Saver, print};
use crate::stderr::Stderr;
use crate::{Failure, status};

/// What a command works with.
pub struct Ctx<'a> {
    pub client: &'a Client,
    pub opts: &'a Options,
    pub stderr: &'a Arc<Stderr>,
    pub asker: &'a Asker,
    /// Ctrl-C and SIGTERM, for `listen`.
    pub signals: Option<Receiver<()>>,
}

/// Runs the command; the exit status, or why it failed.
pub fn run(ctx: &Ctx<'_>) -> Result<u8, Failure> {
    match &ctx.opts.command {
        Command::Info => info(ctx),
        Command::List(list) => list_items(ctx, *list),
        Command::Call { tool, arguments } => call(ctx, tool, arguments),
        Command::Read { uri } => read(ctx, uri),
        Command::Prompt { name, arguments } => prompt(ctx, name, arguments),
        Command::Complete {
            reference,
            argument,
            value,
            context,
        } => complete(ctx, reference, argument, value, context),
        Command::Listen(filter) => listen(ctx, filter),
        Command::Help | Command::Version => Ok(0),
    }
}

impl Ctx<'_> {
    /// A client error while doing `what`.
    fn failure(&self, e: Error, what: &str) -> Failure {
        Failure::from_client(e, what, self.opts, self.asker)
    }

    /// The options of the command's request: the timeout, progress drawn
    /// on stderr, log messages at `--log-level` (modern era: legacy logging
    /// is session-wide, see `connect`).
    fn request_options(&self, progress: bool) -> RequestOptions {
        let mut options = RequestOptions::new();
        if let Some(timeout) = self.opts.timeout {
            options = options.timeout(timeout);
        }
        if progress {
            let stderr = Arc::clone(self.stderr);
            options = options.on_progress(move |p| stderr.progress(p));
        }
        if let (Some(level), Era::Modern { .. }) = (self.opts.log_level, self.client.era()) {
            let stderr = Arc::clone(self.stderr);
            options = options.log(level, move |log| stderr.log(log));
        }
        options
    }

    /// Sends `method` and follows it to its final result, raw; input the
    /// command line cannot give ends it with a message saying which flag
    /// would.
    fn send(&self, method: &str, params: Value, progress: bool) -> Result<Box<RawValue>, Error> {
        let options = self.request_options(progress);
        let res = self.client.request_outcome(method, params, options);
        self.stderr.clear();
        match res? {
            Outcome::Complete(raw) => Ok(raw),
            Outcome::InputRequired(result) => Err(Error::Protocol(unanswerable(&result))),
        }
    }

    /// Prints a result: raw with `--json`, else as `human` shows it.
    fn show<T: DeserializeOwned>(
        &self,
        raw: &RawValue,
        what: &str,
        human: impl FnOnce(&T) -> String,
    ) -> Result<T, Failure> {
        let typed: T = serde_json::from_str(raw.get()).map_err(|e| {
            Failure::connection(format!("the server's {what} result is not valid: {e}"))
        })?;
        if self.opts.json {
            print(raw.get());
        } else {
            print(&human(&typed));
        }
        Ok(typed)
    }
}

/// The input requests the command line has no answer for, as advice.
fn unanswerable(result: &InputRequiredResult) -> String {
    let mut needs: Vec<&str> = result
        .input_requests
        .iter()
        .flatten()
        .map(|(_, request)| match request {
            InputRequest::CreateMessage(_) => {
                "a model's reply (sampling is declined unless --sampling-reply TEXT is given)"
            }
            InputRequest::ListRoots(_) => "the client's roots (pass --roots DIR)",
            InputRequest::Elicit(_) => "the user's answers",
            _ => "input of a kind this command line does not know",
        })
        .collect();
    needs.dedup();
    format!(
        "the server needs input that was not given: {}",
        needs.join("; ")
    )
}

fn info(ctx: &Ctx<'_>) -> Result<u8, Failure> {
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
    let how = if era == "legacy" { ", initialize" } else { "" };
    line("era:", &format!("{era} ({version}{how})"));
    if let Some(server) = &server {
        let title = server
            .title
            .as_deref()
            .map_or(String::new(), |t| format!(" ({t})"));
        line(
            "server:",
            &format!("{} {}{title}", server.name, server.version),
        );
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
fn names(ctx: &Ctx<'_>, list: List) -> Option<Vec<String>> {
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

fn list_items(ctx: &Ctx<'_>, list: List) -> Result<u8, Failure> {
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
        .map(|(n, ..)| n.chars().count())
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

fn call(ctx: &Ctx<'_>, tool: &str, arguments: &Map<String, Value>) -> Result<u8, Failure> {
    let params = json!({ "name": tool, "arguments": arguments });
    let raw = match ctx.send("tools/call", params, true) {
        Ok(raw) => raw,
        Err(e) => {
            // A JSON-RPC error may mean there is no such tool: say so, and
            // which names there are.
            if matches!(e, Error::Rpc(_)) {
                missing_name(ctx, List::Tools, tool)?;
            }
            return Err(ctx.failure(e, &format!("tools/call {tool}")));
        }
    };
    let mut saver = Saver::new(ctx.opts.save.as_deref(), tool);
    let result: CallToolResult = serde_json::from_str(raw.get()).map_err(|e| {
        Failure::connection(format!("the server's tools/call result is not valid: {e}"))
    })?;
    if result.is_error == Some(true) {
        // Some servers report an unknown tool as a failed call.
        missing_name(ctx, List::Tools, tool)?;
    }
    ctx.show::<CallToolResult>(&raw, "tools/call", |r| output::call_result(r, &mut saver))?;
    if result.is_error == Some(true) {
        ctx.stderr.line(&format!(
            "mcp-stdio: tool {tool} reported an error (isError)"
        ));
        return Ok(status::SERVER_FAILURE);
    }
    Ok(0)
}

/// A usage failure when `name` is not in `list`, naming the closest one or
/// those there are; nothing when it is there (or the list cannot be read).
fn missing_name(ctx: &Ctx<'_>, list: List, name: &str) -> Result<(), Failure> {
    let Some(names) = names(ctx, list) else {
        return Ok(());
    };
    if names.iter().any(|n| n == name) {
        return Ok(());
    }
    let kind = match list {
        List::Tools => "tool",
        List::Prompts => "prompt",
        List::Resources => "resource",
        List::Templates => "resource template",
    };
    Err(Failure::usage(format!(
        "the server has no {kind} named {name:?}{}",
        crate::suggest::hint(name, names.iter().map(String::as_str))
    )))
}

fn read(ctx: &Ctx<'_>, uri: &str) -> Result<u8, Failure> {
    let raw = ctx
        .send("resources/read", json!({ "uri": uri }), false)
        .map_err(|e| ctx.failure(e, &format!("resources/read {uri}")))?;
    let stem = uri
        .rsplit(['/', ':'])
        .find(|s| !s.is_empty())
        .unwrap_or("resource");
    let mut saver = Saver::new(ctx.opts.save.as_deref(), stem);
    ctx.show::<ReadResourceResult>(&raw, "resources/read", |r| {
        let texts: Vec<String> = r
            .contents
            .iter()
            .map(|c| output::resource_contents(c, &mut saver))
            .collect();
        texts.join("\n")
    })?;
    Ok(0)
}

fn prompt(ctx: &Ctx<'_>, name: &str, arguments: &BTreeMap<String, String>) -> Result<u8, Failure> {
    let params = json!({ "name": name, "arguments": arguments });
    let raw = match ctx.send("prompts/get", params, false) {
        Ok(raw) => raw,
        Err(e) => {
            if matches!(e, Error::Rpc(_)) {
                missing_name(ctx, List::Prompts, name)?;
                missing_arguments(ctx, name, arguments)?;
            }
            return Err(ctx.failure(e, &format!("prompts/get {name}")));
        }
    };
    let mut saver = Saver::new(ctx.opts.save.as_deref(), name);
    ctx.show::<GetPromptResult>(&raw, "prompts/get", |r| {
        output::prompt_result(r, &mut saver)
    })?;
    Ok(0)
}

/// A usage failure naming the required arguments of prompt `name` that
/// were not given.
fn missing_arguments(
    ctx: &Ctx<'_>,
    name: &str,
    given: &BTreeMap<String, String>,
) -> Result<(), Failure> {
    let prompt = ctx
        .client
        .prompts()
        .filter_map(Result::ok)
        .find(|p| p.name == name);
    let missing: Vec<String> = prompt
        .iter()
        .flat_map(|p| p.arguments.iter().flatten())
        .filter(|a| a.required == Some(true) && !given.contains_key(&a.name))
        .map(|a| format!("{}=VALUE", a.name))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(Failure::usage(format!(
        "prompt {name} needs {}",
        missing.join(" ")
    )))
}

fn complete(
    ctx: &Ctx<'_>,
    reference: &Value,
    argument: &str,
    value: &str,
    context: &BTreeMap<String, String>,
) -> Result<u8, Failure> {
    let mut params = json!({
        "ref": reference,
        "argument": { "name": argument, "value": value },
    });
    if !context.is_empty() {
        params["context"] = json!({ "arguments": context });
    }
    let raw = ctx
        .send("completion/complete", params, false)
        .map_err(|e| ctx.failure(e, "completion/complete"))?;
    let result = ctx.show::<CompleteResult>(&raw, "completion/complete", |r| {
        r.completion.values.join("\n")
    })?;
    let shown = result.completion.values.len() as u64;
    match (result.completion.total, result.completion.has_more) {
        (Some(total), _) if total > shown && !ctx.opts.json => {
            ctx.stderr.line(&format!("({shown} of {total} shown)"));
        }
        (_, Some(true)) if !ctx.opts.json => ctx.stderr.line("(there are more)"),
        _ => {}
    }
    Ok(0)
}

fn listen(ctx: &Ctx<'_>, filter: &SubscriptionFilter) -> Result<u8, Failure> {
    let json = ctx.opts.json;
    let mut sub = ctx
        .client
        .listen(filter.clone())
        .map_err(|e| ctx.failure(e, "subscriptions/listen"))?;
    let accepted = sub.accepted().clone();
    if json {
        let ack = json!({
            "method": "notifications/subscriptions/acknowledged",
            "params": { "notifications": accepted },
        });
        print(&ack.to_string());
    } else {
        print(&format!("listening: {}", describe_filter(&accepted)));
    }
    let refused = sub.not_accepted();
    if refused != SubscriptionFilter::default() {
        ctx.stderr
            .line(&format!("not accepted: {}", describe_filter(&refused)));
    }
    let legacy = matches!(ctx.client.era(), Era::Legacy { .. });
    loop {
        let next = match &ctx.signals {
            Some(signals) => {
                // The subscription has no channel to select on: wait in
                // short slices, looking for a signal between them.
                match sub.recv_timeout(Duration::from_millis(100)) {
                    Ok(None) if signals.try_recv().is_ok() => {
                        sub.cancel();
                        end_line(json, "cancelled", "cancelled (interrupted)");
                        return Ok(status::INTERRUPTED);
                    }
                    Ok(None) => continue,
                    Ok(Some(event)) => Ok(event),
                    Err(end) => Err(end),
                }
            }
            None => sub.recv(),
        };
        match next {
            Ok(event) => {
                if !print(&event_line(&event, json)) {
                    // Nobody reads our output any more (`| head`).
                    sub.cancel();
                    return Ok(0);
                }
            }
            Err(SubscriptionEnd::Closed) => {
                end_line(json, "closed", "closed by the server");
                return Ok(0);
            }
            // A legacy server has no final result: the connection ending is
            // how its subscriptions end.
            Err(SubscriptionEnd::Disconnected) if legacy => {
                end_line(
                    json,
                    "closed",
                    "closed by the server (it ended the connection)",
                );
                return Ok(0);
            }
            Err(SubscriptionEnd::Disconnected) => {
                return Err(Failure::connection(
                    "the connection closed before the server's final result for subscriptions/listen",
                ));
            }
        }
    }
}

fn end_line(json: bool, end: &str, text: &str) {
    if json {
        print(&json!({ "end": end }).to_string());
    } else {
        print(text);
    }
}

/// `tools, prompts, resources, resource mem://counter`.
fn describe_filter(filter: &SubscriptionFilter) -> String {
    let mut parts = Vec::new();
    let on = |flag: Option<bool>| flag == Some(true);
    if on(filter.tools_list_changed) {
        parts.push("tools".to_owned());
    }
    if on(filter.prompts_list_changed) {
        parts.push("prompts".to_owned());
    }
    if on(filter.resources_list_changed) {
        parts.push("resources".to_owned());
    }
    for uri in filter.resource_subscriptions.iter().flatten() {
        parts.push(format!("resource {uri}"));
    }
    for task in filter.task_ids.iter().flatten() {
        parts.push(format!("task {task}"));
    }
    if parts.is_empty() {
        "nothing".to_owned()
    } else {
        parts.join(", ")
    }
}

/// One event: its short name for people, its notification for `--json`.
fn event_line(event: &SubscriptionEvent, json: bool) -> String {
    let (method, params) = match event {
        SubscriptionEvent::ToolsListChanged => ("notifications/tools/list_changed", json!({})),
        SubscriptionEvent::PromptsListChanged => ("notifications/prompts/list_changed", json!({})),
        SubscriptionEvent::ResourcesListChanged => {
            ("notifications/resources/list_changed", json!({}))
        }
        SubscriptionEvent::ResourceUpdated { uri } => {
            ("notifications/resources/updated", json!({ "uri": uri }))
        }
        SubscriptionEvent::Resubscribed { accepted } => (
            "notifications/subscriptions/acknowledged",
            json!({ "notifications": accepted }),
        ),
        SubscriptionEvent::TaskStatus(task) => ("notifications/tasks", json!(task)),
        SubscriptionEvent::Other { method, params } => (method.as_str(), params.clone()),
        _ => ("unknown", json!({})),
    };
    if json {
        return json!({ "method": method, "params": params }).to_string();
    }
    let short = method.strip_prefix("notifications/").unwrap_or(method);
    match event {
        SubscriptionEvent::ResourceUpdated { uri } => format!("{short} {uri}"),
        SubscriptionEvent::ToolsListChanged
        | SubscriptionEvent::PromptsListChanged
        | SubscriptionEvent::ResourcesListChanged => short.to_owned(),
        _ => format!("{short} {params}"),
    }
}

//! What each command does with the client: `call`, `read`, `prompt` and
//! `complete` here, `info` and the lists in `lists`, `listen` in `listen`.
//!
//! Results go to stdout: for people through `output`, with `--json` as the
//! server sent them (`Client::request_outcome` keeps them raw; the list
//! commands page with it too, so that every item is printed byte for byte).
//! Everything else (progress, logs, questions, errors) goes to stderr.

use std::collections::BTreeMap;
use std::sync::Arc;

use crossbeam_channel::Receiver;
use mcp_stdio::types::{
    CallToolResult, CompleteResult, GetPromptResult, InputRequest, InputRequiredResult,
    ReadResourceResult,
};
use mcp_stdio::{Client, Era, Error, Outcome, RequestOptions};
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

mod listen;
mod lists;

use crate::args::{Arguments, Command, List, Options};
use crate::ask::Asker;
use crate::output::{self, Saver, print};
use crate::stderr::Stderr;
use crate::url_for_people::url_for_people;
use crate::{Failure, status};

/// What a command works with.
pub struct Ctx<'a> {
    pub client: &'a Client,
    pub opts: &'a Options,
    pub stderr: &'a Arc<Stderr>,
    pub asker: &'a Asker,
    /// Ctrl-C and SIGTERM, for `listen`.
    pub signals: Option<Receiver<()>>,
    /// When `--timeout` runs out: it bounds the whole command, start-up
    /// included, so a request gets what is left of it.
    pub deadline: Option<std::time::Instant>,
}

/// Runs the command; the exit status, or why it failed.
pub fn run(ctx: &Ctx<'_>) -> Result<u8, Failure> {
    match &ctx.opts.command {
        Command::Info => lists::info(ctx),
        Command::List(list) => lists::list_items(ctx, *list),
        Command::Call { tool, arguments } => call(ctx, tool, arguments),
        Command::Read { uri } => read(ctx, uri),
        Command::Prompt { name, arguments } => prompt(ctx, name, arguments),
        Command::Complete {
            reference,
            argument,
            value,
            context,
        } => complete(ctx, reference, argument, value, context),
        Command::Listen(filter) => listen::listen(ctx, filter),
        Command::Login => login(ctx),
        // Served before a command context exists (`serve_http`, `logout`).
        Command::ServeHttp(_) | Command::Logout => Ok(0),
        Command::Help | Command::Version => Ok(0),
    }
}

/// `login`: connecting authorized the client if the server asked (the
/// tokens are in their file now); said in one line.
fn login(ctx: &Ctx<'_>) -> Result<u8, Failure> {
    let Some(crate::args::ServerSpec::Url(url)) = &ctx.opts.server else {
        return Ok(0);
    };
    // A request that needs authorization, if connecting needed none.
    ctx.client
        .list_tools(None)
        .map_err(|e| ctx.failure(e, "tools/list"))?;
    #[cfg(feature = "http")]
    if let Some(file) = crate::login::token_file(url).filter(|f| crate::login::holds_a_token(f)) {
        crate::output::print(&format!(
            "logged in to {}: tokens kept in {}",
            url_for_people(url),
            file.display()
        ));
        return Ok(0);
    }
    crate::output::print(&format!(
        "{} asked for no authorization: nothing to keep",
        url_for_people(url)
    ));
    Ok(0)
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
        if let Some(deadline) = self.deadline {
            // A request that has no time left times out at once (and is
            // cancelled), as it would a moment later.
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            options = options.timeout(left.max(std::time::Duration::from_millis(1)));
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
            // A legacy server asks on a request of its own, and answers
            // the command's request whatever became of its question: a
            // question the command line could not answer fails the command
            // all the same (the refusal says which `--answer` to pass).
            Outcome::Complete(_) if let Some(refused) = self.asker.refused() => {
                Err(Error::Protocol(refused))
            }
            Outcome::Complete(raw) => Ok(raw),
            Outcome::InputRequired(result) => Err(self.asker.refuse(unanswerable(&result))),
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
            if self.opts.save.is_some() {
                // `--save` writes its files as it does for people (the
                // text is not printed: stdout is the result as sent).
                let _ = human(&typed);
            }
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

fn call(ctx: &Ctx<'_>, tool: &str, arguments: &Arguments) -> Result<u8, Failure> {
    let schema = input_schema(ctx, tool);
    let arguments: Map<String, Value> = match arguments {
        Arguments::Object(map) => crate::values::object_by_schema(map, schema.as_ref()),
        Arguments::Pairs(pairs) => {
            crate::values::by_schema(pairs, schema.as_ref()).map_err(Failure::usage)?
        }
    };
    let mut saver = Saver::new(ctx.opts.save.as_deref(), tool).map_err(Failure::usage)?;
    let params = json!({ "name": tool, "arguments": arguments });
    let raw = match ctx.send("tools/call", params, true) {
        Ok(raw) => raw,
        Err(e) => {
            // A JSON-RPC error may mean there is no such tool: say so, and
            // which names there are.
            if matches!(e, Error::Rpc(_)) && !e.is_transport_failure() {
                missing_name(ctx, List::Tools, tool)?;
            }
            return Err(ctx.failure(e, &format!("tools/call {tool}")));
        }
    };
    let result: CallToolResult = serde_json::from_str(raw.get()).map_err(|e| {
        Failure::connection(format!("the server's tools/call result is not valid: {e}"))
    })?;
    if result.is_error == Some(true) {
        // Some servers report an unknown tool as a failed call.
        missing_name(ctx, List::Tools, tool)?;
    }
    ctx.show::<CallToolResult>(&raw, "tools/call", |r| output::call_result(r, &mut saver))?;
    saved(ctx, &saver)?;
    if result.is_error == Some(true) {
        ctx.stderr.error(
            &format!(
                "tool {} reported an error (isError)",
                crate::escape::line(tool)
            ),
            status::SERVER_FAILURE,
            None,
        );
        return Ok(status::SERVER_FAILURE);
    }
    Ok(0)
}

/// The input schema of `tool`, when the server lists it (`None` when it
/// does not, or its list cannot be read: the arguments are then typed as
/// if the schema said nothing).
fn input_schema(ctx: &Ctx<'_>, tool: &str) -> Option<Value> {
    for listed in ctx.client.tools() {
        match listed {
            Ok(t) if t.name == tool => return Some(t.input_schema),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    None
}

/// A file `--save` could not write fails the command (status 2, the
/// option's directory is wrong), once the output is printed. With `--json`
/// each file written is a note on stderr (for people the output says it).
fn saved(ctx: &Ctx<'_>, saver: &Saver) -> Result<(), Failure> {
    if ctx.opts.json {
        for path in saver.saved() {
            ctx.stderr.note(&format!("saved {}", path.display()));
        }
    }
    match saver.error() {
        Some(e) => Err(Failure::usage(e)),
        None => Ok(()),
    }
}

/// A usage failure when `name` is not in `list`, naming the closest one or
/// those there are; nothing when it is there (or the list cannot be read).
fn missing_name(ctx: &Ctx<'_>, list: List, name: &str) -> Result<(), Failure> {
    let Some(names) = lists::names(ctx, list) else {
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
        "the server has no {kind} named {:?}{}",
        name,
        crate::suggest::hint(name, names.iter().map(String::as_str))
    )))
}

fn read(ctx: &Ctx<'_>, uri: &str) -> Result<u8, Failure> {
    let stem = uri
        .rsplit(['/', ':'])
        .find(|s| !s.is_empty())
        .unwrap_or("resource");
    let mut saver = Saver::new(ctx.opts.save.as_deref(), stem).map_err(Failure::usage)?;
    let raw = ctx
        .send("resources/read", json!({ "uri": uri }), false)
        .map_err(|e| ctx.failure(e, &format!("resources/read {uri}")))?;
    ctx.show::<ReadResourceResult>(&raw, "resources/read", |r| {
        let texts: Vec<String> = r
            .contents
            .iter()
            .map(|c| output::resource_contents(c, &mut saver))
            .collect();
        texts.join("\n")
    })?;
    saved(ctx, &saver)?;
    Ok(0)
}

fn prompt(ctx: &Ctx<'_>, name: &str, arguments: &BTreeMap<String, String>) -> Result<u8, Failure> {
    let mut saver = Saver::new(ctx.opts.save.as_deref(), name).map_err(Failure::usage)?;
    let params = json!({ "name": name, "arguments": arguments });
    let raw = match ctx.send("prompts/get", params, false) {
        Ok(raw) => raw,
        Err(e) => {
            if matches!(e, Error::Rpc(_)) && !e.is_transport_failure() {
                missing_name(ctx, List::Prompts, name)?;
                missing_arguments(ctx, name, arguments)?;
            }
            return Err(ctx.failure(e, &format!("prompts/get {name}")));
        }
    };
    ctx.show::<GetPromptResult>(&raw, "prompts/get", |r| {
        output::prompt_result(r, &mut saver)
    })?;
    saved(ctx, &saver)?;
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
    let raw = match ctx.send("completion/complete", params, false) {
        Ok(raw) => raw,
        Err(e) => {
            // As for `call` and `prompt`: a name the server does not have
            // is a usage error, with the closest one.
            if matches!(e, Error::Rpc(_)) && !e.is_transport_failure() {
                match (
                    reference["type"].as_str(),
                    reference["name"].as_str(),
                    reference["uri"].as_str(),
                ) {
                    (Some("ref/prompt"), Some(name), _) => missing_name(ctx, List::Prompts, name)?,
                    (Some("ref/resource"), _, Some(uri)) => {
                        missing_name(ctx, List::Templates, uri)?
                    }
                    _ => {}
                }
            }
            return Err(ctx.failure(e, "completion/complete"));
        }
    };
    let result: CompleteResult = serde_json::from_str(raw.get()).map_err(|e| {
        Failure::connection(format!(
            "the server's completion/complete result is not valid: {e}"
        ))
    })?;
    let values = &result.completion.values;
    if ctx.opts.json {
        print(raw.get());
        return Ok(0);
    }
    if !values.is_empty() {
        // One a line: a value's own newline would make two of it.
        let values: Vec<_> = values.iter().map(|v| crate::escape::line(v)).collect();
        print(&values.join("\n"));
    }
    let shown = values.len() as u64;
    match (result.completion.total, result.completion.has_more) {
        (_, _) if values.is_empty() => ctx.stderr.line("(no completions)"),
        (Some(total), _) if total > shown => {
            ctx.stderr.line(&format!("({shown} of {total} shown)"));
        }
        (_, Some(true)) => ctx.stderr.line("(there are more)"),
        _ => {}
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_no_flag_gave_is_named_with_its_flag() {
        let result: InputRequiredResult = serde_json::from_value(json!({
            "resultType": "input_required",
            "inputRequests": {
                "q": { "method": "sampling/createMessage", "params": { "messages": [], "maxTokens": 10 } },
                "r": { "method": "roots/list", "params": {} }
            }
        }))
        .unwrap();
        assert_eq!(
            unanswerable(&result),
            "the server needs input that was not given: a model's reply (sampling is declined unless --sampling-reply TEXT is given); the client's roots (pass --roots DIR)"
        );
    }
}

//! The client the official conformance suite drives
//! (`@modelcontextprotocol/conformance client`, `tests/conformance/run-client.sh`):
//! it is started as `conformance_client URL` with the scenario's name in
//! `MCP_CONFORMANCE_SCENARIO`, the revision to speak in
//! `MCP_CONFORMANCE_PROTOCOL_VERSION` and, for some scenarios, what to do
//! in `MCP_CONFORMANCE_CONTEXT` (JSON), and does what the scenario asks of
//! a client over Streamable HTTP with this crate's `Client`. The lifecycle
//! follows the revision: `initialize` for dated revisions up to
//! 2025-11-25, per-request `_meta` for 2026-07-28. With `MCP_STDIO_WIRE`
//! set, every message both ways is printed on stderr.

use mcp_stdio::types::{CreateMessageResult, ElicitRequestParams, ElicitResult, ListRootsResult};
use mcp_stdio::{Client, EraPolicy, Error, OAuth, WireDirection};
use serde_json::{Map, Value, json};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;

fn main() {
    let url = std::env::args().next_back().unwrap_or_default();
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    if let Err(e) = run(&url, &scenario) {
        eprintln!("conformance_client: {scenario}: {e}");
        std::process::exit(1);
    }
}

fn run(url: &str, scenario: &str) -> Result<(), Error> {
    let client = connect(url)?;
    let tools = client.tools().collect::<Result<Vec<_>, _>>()?;
    match scenario {
        // The suite's own client calls the first tool with these arguments.
        "tools_call" | "initialize" => {
            if let Some(tool) = tools.first() {
                client.call(&tool.name, json!({ "a": 5, "b": 3 }))?;
            }
        }
        // The tool's stream ends before its answer, which comes on the
        // GET that resumes it (2025-11-25 "Resumability and Redelivery").
        "sse-retry" => {
            client.call("test_reconnection", json!({}))?;
        }
        "elicitation-sep1034-client-defaults" => {
            client.call("test_client_elicitation_defaults", json!({}))?;
        }
        // SEP-2322: the retry echoes `requestState` exactly, and another
        // call in between carries none of it (the client does both).
        "sep-2322-client-request-state" => {
            for tool in [
                "test_mrtr_echo_state",
                "test_mrtr_unrelated",
                "test_mrtr_no_state",
                "test_mrtr_no_result_type",
            ] {
                client.call(tool, json!({}))?;
            }
        }
        // SEP-2243: the calls the scenario lists, whose arguments the
        // client mirrors into `Mcp-Param-*` headers.
        "http-custom-headers" => {
            for call in context()["toolCalls"].as_array().into_iter().flatten() {
                let name = call["name"].as_str().unwrap_or_default();
                client.call(name, call["arguments"].clone())?;
            }
        }
        // Every tool the client kept (the invalid ones were left out of
        // the list), with a string for each required argument.
        "http-invalid-tool-headers" => {
            for tool in &tools {
                let schema = serde_json::to_value(&tool.input_schema).unwrap_or_default();
                let arguments: Map<String, Value> = (schema["required"].as_array())
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(|name| (name.to_owned(), json!("us-west1")))
                    .collect();
                client.call(&tool.name, Value::Object(arguments))?;
            }
        }
        // SEP-1613: the schema as listed, sent back to be compared.
        "json-schema-2020-12-preservation" => {
            let focal = tools
                .iter()
                .find(|tool| tool.name == "json_schema_2020_12_tool")
                .ok_or_else(|| Error::Protocol("json_schema_2020_12_tool is not listed".into()))?;
            let schema = serde_json::to_value(&focal.input_schema).unwrap_or_default();
            client.call("json_schema_echo", json!({ "schema": schema }))?;
        }
        // The authorization scenarios: a tool listed, then called (a
        // step-up scenario asks for more scope on the call; a migration
        // one moves to another authorization server between the two).
        _ if scenario.starts_with("auth/") => {
            if let Some(tool) = tools.first() {
                client.call(&tool.name, json!({}))?;
            }
        }
        _ => {}
    }
    client.close().map(drop)
}

/// `MCP_CONFORMANCE_CONTEXT`, or `null`.
fn context() -> Value {
    let context = std::env::var("MCP_CONFORMANCE_CONTEXT").unwrap_or_default();
    serde_json::from_str(&context).unwrap_or(Value::Null)
}

/// A client that declares every input capability: elicitation accepted
/// with the schema's defaults (SEP-1034), a canned sampling answer, one
/// root.
fn connect(url: &str) -> Result<Client, Error> {
    let version = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").unwrap_or_default();
    let era = if version.as_str() < "2026" {
        EraPolicy::LegacyOnly
    } else {
        EraPolicy::ModernOnly
    };
    let mut builder = Client::builder()
        .client_info("mcp-stdio-conformance", env!("CARGO_PKG_VERSION"))
        .era(era)
        .on_elicitation(|params| match params {
            ElicitRequestParams::Form(form) => Ok(ElicitResult::accept(defaults(
                &serde_json::to_value(&form.requested_schema).unwrap_or_default(),
            ))),
            ElicitRequestParams::Url(_) => Ok(ElicitResult::decline()),
        })
        .on_sampling(|_| {
            Ok(serde_json::from_value::<CreateMessageResult>(json!({
                "role": "assistant", "model": "conformance",
                "content": { "type": "text", "text": "Hello from the client." } }))
            .expect("a valid CreateMessageResult"))
        })
        .on_roots(|| {
            Ok(serde_json::from_value::<ListRootsResult>(json!({
                "roots": [{ "uri": "file:///tmp", "name": "tmp" }] }))
            .expect("a valid ListRootsResult"))
        });
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    if scenario.starts_with("auth/") {
        builder = builder.oauth(oauth());
    }
    if std::env::var_os("MCP_STDIO_WIRE").is_some() {
        builder = builder.wire(|direction, line| {
            let arrow = match direction {
                WireDirection::Sent => "->",
                WireDirection::Received => "<-",
            };
            eprintln!("{arrow} {}", String::from_utf8_lossy(line));
        });
    }
    builder.connect_url(url)
}

/// The suite's client identity (its `auth/basic-cimd` scenario expects
/// this URL as the client ID), the pre-registered credentials a scenario
/// gives in its context, and the suite's way of completing the
/// authorization step: its authorization server redirects at once, so the
/// "user agent" is one GET whose `Location` is the redirect.
fn oauth() -> OAuth {
    let context = context();
    let (id, secret) = (
        context["client_id"].as_str(),
        context["client_secret"].as_str(),
    );
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    if let (Some(id), Some(secret), true) =
        (id, secret, scenario.starts_with("auth/client-credentials"))
    {
        return OAuth::client_credentials(id, secret);
    }
    let mut oauth = OAuth::authorization_code("http://localhost:3333/callback", follow_once)
        .client_name("mcp-stdio-conformance")
        .client_metadata_url("https://conformance-test.local/client-metadata.json");
    if let Some(id) = id {
        oauth = oauth.pre_registered(id, secret);
    }
    oauth
}

/// GETs `url` (plain HTTP) and returns its redirect's `Location`.
fn follow_once(url: &str) -> Result<String, String> {
    let rest = url.strip_prefix("http://").ok_or("not an http:// URL")?;
    let (authority, target) = match rest.find('/') {
        Some(at) => rest.split_at(at),
        None => (rest, "/"),
    };
    let mut stream = TcpStream::connect(authority).map_err(|e| e.to_string())?;
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut lines = BufReader::new(stream).lines();
    let status = lines
        .next()
        .ok_or("no answer")?
        .map_err(|e| e.to_string())?;
    for line in lines {
        let line = line.map_err(|e| e.to_string())?;
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("location")
        {
            return Ok(value.trim().to_owned());
        }
    }
    Err(format!(
        "the authorization endpoint did not redirect: {status}"
    ))
}

/// Each property's `default`, as a form the user accepted untouched.
fn defaults(schema: &Value) -> Map<String, Value> {
    let properties = schema.get("properties").and_then(Value::as_object);
    properties
        .into_iter()
        .flatten()
        .filter_map(|(name, field)| Some((name.clone(), field.get("default")?.clone())))
        .collect()
}

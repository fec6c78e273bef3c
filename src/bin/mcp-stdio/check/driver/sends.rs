use std::time::Duration;

use serde_json::{Value, json};

use super::{Answer, Era, Missing, Msg, Session, meta_declaring};
use crate::check::short;

impl Session {
    /// `initialize` with `version`, then `notifications/initialized`. A
    /// result the checker cannot read is `Ok(Value::Null)`, with why in
    /// `unread`; an error it cannot read, a refusal.
    pub fn initialize(&mut self, version: &str, deadline: Duration) -> Result<Value, String> {
        let id = self.fresh_id();
        let line = json!({
            "jsonrpc": "2.0", "id": id, "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": { "name": "mcp-stdio-check", "version": env!("CARGO_PKG_VERSION") }
            }
        });
        self.send_json(&line);
        let (answer, before) = self
            .answer_with(&id, deadline)
            .map_err(|e| format!("initialize: {e}"))?;
        self.handshake = before;
        let reply = match answer {
            Answer::Json(reply) => reply,
            Answer::Malformed { why, msg } => {
                let line = short(msg.text(), 120);
                self.handshake.push(msg);
                return Err(format!("initialize: {}", Missing::Malformed { why, line }));
            }
            Answer::Unreadable { why, line, error } => {
                let shown = short(&line, 120);
                self.handshake.push(Msg::Unreadable(line, why.clone()));
                let unread = Missing::Unreadable {
                    why,
                    line: shown,
                    error,
                };
                if error {
                    return Err(format!("initialize was refused: {unread}"));
                }
                // Answered with a result: the era is spoken, what the
                // result says is unknown (the version stays the one
                // offered).
                self.unread = Some(format!("initialize: {unread}"));
                self.send_json(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
                return Ok(Value::Null);
            }
        };
        self.handshake
            .push(Msg::Json(reply.clone(), reply.to_string()));
        let Some(result) = reply.get("result") else {
            return Err(format!(
                "initialize was refused: {}",
                reply.get("error").unwrap_or(&Value::Null)
            ));
        };
        if let Some(v) = result.get("protocolVersion").and_then(Value::as_str) {
            self.version = v.to_owned();
        }
        self.initialize = Some(result.clone());
        self.send_json(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        Ok(reply)
    }

    /// A new integer id.
    pub fn fresh_id(&mut self) -> Value {
        self.next_id += 1;
        json!(self.next_id)
    }

    /// The `_meta` of a modern request: version, capabilities (none),
    /// identity.
    pub fn meta(&self) -> Value {
        let mut meta = meta_declaring(json!({}));
        meta["io.modelcontextprotocol/protocolVersion"] = json!(self.version);
        meta
    }

    /// The request `method` with `params` and `id`, as this session's era
    /// writes it: a modern one's `_meta` added to its params.
    pub fn envelope(&self, id: &Value, method: &str, params: Value) -> Value {
        let mut params = match params {
            Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        if self.era == Era::Modern && !params.contains_key("_meta") {
            params.insert("_meta".into(), self.meta());
        }
        json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
    }

    /// Sends a request with a fresh id; returns the id.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.fresh_id();
        let message = self.envelope(&id, method, params);
        self.send_json(&message);
        id
    }

    /// Sends a request and waits for its response.
    pub fn call(&mut self, method: &str, params: Value, wait: Duration) -> Result<Value, Missing> {
        let id = self.request(method, params);
        self.response(&id, wait)
    }

    /// Sends one message as a line.
    pub fn send_json(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.send_raw(line.as_bytes());
    }

    /// Writes bytes as they are (in evidence, with `\n` and `\r` shown).
    pub fn send_raw(&mut self, bytes: &[u8]) {
        let shown = String::from_utf8_lossy(bytes)
            .replace('\r', "\\r")
            .replace('\n', "\\n");
        self.transcript.push("sent", &shown);
        if let Err(e) = self.link.send(bytes) {
            self.transcript.note(&format!("could not send: {e}"));
        }
    }
}

use std::io::Read;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::{Body, HttpLink, LegacyState, message_headers, open, sse};
use crate::check::driver::{Incoming, Link};

impl HttpLink {
    fn post(&mut self, line: &[u8]) -> std::io::Result<()> {
        let message: Option<Value> = serde_json::from_slice(line).ok();
        let legacy = self
            .legacy
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let mut headers = message_headers(message.as_ref(), &legacy);
        headers.extend(self.headers.iter().cloned());
        let shown: Vec<String> = headers.iter().map(|(n, v)| format!("{n}: {v}")).collect();
        self.transcript.note(&format!(
            "POST {} ({})",
            self.url.shown_path(),
            shown.join(", ")
        ));
        let (status, response_headers, reader) =
            open(&self.url, "POST", &headers, line, self.wait).map_err(std::io::Error::other)?;
        let content_type = response_headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
            .map_or(String::new(), |(_, v)| v.to_ascii_lowercase());
        self.transcript
            .note(&format!("HTTP {status} {content_type}"));
        let initialize =
            message.as_ref().and_then(|m| m.get("method")) == Some(&json!("initialize"));
        if initialize
            && let Some((_, id)) = response_headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case("mcp-session-id"))
        {
            self.legacy
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .session = Some(id.clone());
        }
        let mut body = Body::new(status, &response_headers, reader);
        if content_type.starts_with("text/event-stream") {
            // A stream is read on a thread of its own for as long as the
            // session lasts: no deadline (the session's waits bound it).
            body.reader.get_mut().deadline = None;
            if let Ok(stream) = body.reader.get_ref().stream.try_clone() {
                let _ = stream.set_read_timeout(None);
                self.streams
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(stream);
            }
            let tx = self.tx.clone();
            let budget = Arc::clone(&self.budget);
            let legacy = Arc::clone(&self.legacy);
            std::thread::Builder::new()
                .name("check-sse".into())
                .spawn(move || {
                    sse(body, |data, cut| {
                        if initialize {
                            learn_version(&legacy, data.as_bytes());
                        }
                        budget.lease(data.len()).is_some_and(|lease| {
                            let data = data.into_bytes();
                            let incoming = if cut {
                                Incoming::Cut(data, lease)
                            } else {
                                Incoming::Line(data, lease)
                            };
                            tx.send(incoming).is_ok()
                        })
                    })
                })
                .map_err(std::io::Error::other)?;
        } else {
            let mut text = Vec::new();
            if let Err(e) = body.take(16 << 20).read_to_end(&mut text) {
                // Part of a body is not a message: the wait for it ends
                // as the wait for no answer does.
                self.transcript.note(&format!(
                    "the response body was not read whole ({} bytes): {e}",
                    text.len()
                ));
                return Ok(());
            }
            let text = text.trim_ascii().to_vec();
            if initialize {
                learn_version(&self.legacy, &text);
            }
            if !text.is_empty()
                && let Some(lease) = self.budget.lease_now(text.len())
            {
                let _ = self.tx.send(Incoming::Line(text, lease));
            }
        }
        Ok(())
    }
}

/// The version an `initialize` result agreed, for the legacy requests'
/// header.
fn learn_version(legacy: &Mutex<LegacyState>, reply: &[u8]) {
    if let Ok(v) = serde_json::from_slice::<Value>(reply)
        && let Some(version) = v.pointer("/result/protocolVersion").and_then(Value::as_str)
    {
        legacy.lock().unwrap_or_else(|e| e.into_inner()).version = Some(version.to_owned());
    }
}

impl Link for HttpLink {
    fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if self.closed {
            return Err(std::io::Error::other("the session is closed"));
        }
        for line in bytes.split(|b| *b == b'\n') {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            self.post(line)?;
        }
        Ok(())
    }

    fn close_input(&mut self) {
        self.closed = true;
        self.shut_streams();
        let _ = self.tx.send(Incoming::Eof);
    }
}

impl HttpLink {
    fn shut_streams(&self) {
        for stream in self
            .streams
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    }
}

impl Drop for HttpLink {
    /// Every SSE stream it opened is closed (its reader thread ends).
    fn drop(&mut self) {
        self.shut_streams();
    }
}

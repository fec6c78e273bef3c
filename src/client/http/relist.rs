//! After a `HeaderMismatch` (`-32020`) answering a `tools/call`, spec
//! 2026-07-28 basic/transports/streamable-http ("Custom Headers from Tool
//! Parameters"): the client **SHOULD** call `tools/list` to check for
//! changes to the tool's `inputSchema`, then retry the original request
//! with the appropriate headers. The bridge does both, once per call,
//! without the link: the listing is the bridge's own (its answers only
//! teach the `x-mcp-header` marks), and the retry's answer is the call's.

use serde_json::{Value, json};

use super::Shared;
use super::exchange::Cursor;
use super::post::Failed;
use crate::sync::lock;
use crate::types::method;

/// The most pages one re-listing reads.
const MAX_PAGES: usize = 100;

impl Shared {
    /// The call `line`, refused for its headers, sent again with the
    /// headers the tools' marks, listed again, now give (the same ones
    /// when the listing failed); its answer goes to `deliver`.
    pub(super) fn retry_with_new_marks(
        &self,
        line: &[u8],
        id: Option<&str>,
        headers: &[(String, String)],
        cursor: &mut Cursor,
        deliver: impl FnMut(Vec<u8>) -> bool,
    ) -> Result<(), String> {
        let relisted = self.relist(line).then(|| serde_json::from_slice(line).ok());
        let headers = match relisted.flatten() {
            Some(outgoing) => self.headers(&outgoing, &super::OutgoingParams::of(&outgoing)),
            None => headers.to_vec(),
        };
        self.exchange("POST", line, id, &headers, cursor, deliver)
            .map_err(Failed::into_why)
    }

    /// Lists every tool again (every page), with the `_meta` of the call
    /// `line` that was refused, to learn their marks. Whether it could.
    fn relist(&self, line: &[u8]) -> bool {
        let meta = serde_json::from_slice::<Value>(line)
            .ok()
            .and_then(|v| v.pointer("/params/_meta").cloned());
        let mut cursor: Option<String> = None;
        for page in 0..MAX_PAGES {
            let mut params = json!({});
            if let Some(meta) = &meta {
                params["_meta"] = meta.clone();
            }
            if let Some(cursor) = &cursor {
                params["cursor"] = cursor.as_str().into();
            }
            let body = json!({ "jsonrpc": "2.0", "id": format!("mcp-stdio-relist-{page}"),
                "method": method::TOOLS_LIST, "params": params })
            .to_string();
            let Ok(outgoing) = serde_json::from_str(&body) else {
                return false;
            };
            let headers = self.headers(&outgoing, &super::OutgoingParams::of(&outgoing));
            let mut listed = None;
            let read = self.exchange(
                "POST",
                body.as_bytes(),
                None,
                &headers,
                &mut Cursor::default(),
                |message| {
                    let message = lock(&self.params).learn(message, &mut |_, _| {});
                    if let Ok(reply) = serde_json::from_slice::<Value>(&message)
                        && let Some(result) = reply.get("result")
                    {
                        listed = Some(result["nextCursor"].as_str().map(str::to_owned));
                    }
                    true
                },
            );
            match (read, listed) {
                (Ok(()), Some(Some(next))) => cursor = Some(next),
                (Ok(()), Some(None)) => return true,
                _ => return false,
            }
        }
        false
    }
}

//! The legacy handshake (2025-11-25): `initialize`, then
//! `notifications/initialized`, for a server the probe found legacy or a
//! client that speaks legacy only (`EraPolicy::LegacyOnly`).

use std::cell::Cell;
use std::sync::Arc;
use std::time::Instant;

use serde::Deserialize;
use serde_json::json;

use super::ServerFacts;
use super::wait::{Wait, roundtrip};
use crate::client::ClientBuilder;
use crate::client::link::Link;
use crate::error::Error;
use crate::jsonrpc::encode_notification;
use crate::types::{Implementation, ServerCapabilities};
use crate::version::LEGACY_VERSIONS;

/// The 2025-11-25 handshake: `initialize`, then `notifications/initialized`.
pub(super) fn initialize(
    options: &ClientBuilder,
    link: &Arc<Link>,
    deadline: Option<Instant>,
    exited: &dyn Fn() -> bool,
) -> Result<ServerFacts, Error> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct InitializeResult {
        protocol_version: String,
        #[serde(default)]
        capabilities: ServerCapabilities,
        #[serde(default)]
        server_info: Option<Implementation>,
        #[serde(default)]
        instructions: Option<String>,
    }
    // A legacy server may ask the client things (ping among them) from
    // the handshake on.
    link.answer_server_requests(options.input.clone());
    let params = json!({
        "protocolVersion": LEGACY_VERSIONS[0],
        "capabilities": options.capabilities,
        "clientInfo": options.info,
    });
    // Spec 2025-11-25 basic/utilities/cancellation: `initialize` is never
    // cancelled.
    let timeout = match deadline {
        Some(deadline) => {
            (deadline.saturating_duration_since(Instant::now())).min(options.request_timeout)
        }
        None => options.request_timeout,
    };
    let wait = Wait::For {
        timeout,
        exited,
        end: Cell::new(None),
        gone: Cell::new(false),
    };
    let reply = match roundtrip(link, "initialize", &params, &wait, false)? {
        Some(reply) => reply.map_err(Error::Rpc)?,
        // Gone, though a child of it holds its output open.
        None if wait.exited() => return Err(Error::Disconnected),
        None => return Err(Error::Timeout),
    };
    let result: InitializeResult = serde_json::from_value(reply)?;
    if !LEGACY_VERSIONS.contains(&result.protocol_version.as_str()) {
        return Err(Error::Protocol(format!(
            "the server wants protocol version {}, which this client does not speak",
            result.protocol_version
        )));
    }
    let mut line = Vec::new();
    encode_notification(&mut line, "notifications/initialized", &json!({}))?;
    if !link.send(line) {
        return Err(Error::Disconnected);
    }
    Ok(ServerFacts {
        era: super::Era::Legacy {
            version: result.protocol_version,
        },
        capabilities: result.capabilities,
        info: result.server_info,
        instructions: result.instructions,
        discover: None,
        legacy_reason: None,
    })
}

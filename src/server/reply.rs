//! Encoding replies: every result is stamped with `resultType` and the
//! server's identity before it goes on the wire.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::jsonrpc::{ErrorObject, RequestId, encode_error, encode_result};
use crate::outcome::Outcome;
use crate::server::Inner;
use crate::server::context::RequestContext;
use crate::types::{
    DiscoverResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, Meta, ResultType, meta_key,
};

/// A result type that carries `resultType` and `_meta`, which the server
/// stamps on every result (spec 2026-07-28 basic/index: every result MUST
/// include `resultType`; servers SHOULD include `serverInfo` in `_meta`).
pub(crate) trait Stamp: Serialize {
    /// Fills `resultType` (when absent: `complete`) and
    /// `_meta["io.modelcontextprotocol/serverInfo"]` (unless set).
    fn stamp(&mut self, server_info: &Value);
}

fn stamp_fields(
    result_type: &mut Option<ResultType>,
    meta: &mut Option<Meta>,
    server_info: &Value,
) {
    result_type.get_or_insert(ResultType::Complete);
    meta.get_or_insert_with(Map::new)
        .entry(meta_key::SERVER_INFO)
        .or_insert_with(|| server_info.clone());
}

// One line per result type; a macro keeps the list readable.
macro_rules! impl_stamp {
    ($($ty:ty),*) => {$(
        impl Stamp for $ty {
            fn stamp(&mut self, server_info: &Value) {
                stamp_fields(&mut self.result_type, &mut self.meta, server_info);
            }
        }
    )*};
}

impl_stamp!(
    crate::types::CallToolResult,
    crate::types::ReadResourceResult,
    crate::types::GetPromptResult,
    crate::types::CompleteResult,
    crate::types::InputRequiredResult,
    crate::types::CreateTaskResult,
    crate::types::GetTaskResult,
    DiscoverResult,
    ListToolsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListPromptsResult
);

/// Results of application-defined methods: stamped when they are objects.
impl Stamp for Value {
    fn stamp(&mut self, server_info: &Value) {
        if let Value::Object(map) = self {
            map.entry("resultType")
                .or_insert_with(|| Value::from("complete"));
            let meta = map
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(meta) = meta {
                meta.entry(meta_key::SERVER_INFO)
                    .or_insert_with(|| server_info.clone());
            }
        }
    }
}

/// A request's response, as its work hands it to whoever writes it.
pub(crate) enum Reply {
    /// Encoded already: errors, and replies a wrapper rewrote.
    Line(Vec<u8>),
    /// A stamped result, encoded only when it is written: the owner writes
    /// an inline handler's result straight into the output, so a large
    /// result is never held twice (as the value and as its JSON).
    Result(Encode),
}

/// Encodes a stamped result response into whatever it is given.
pub(crate) type Encode = Box<dyn FnOnce(&mut dyn Write) -> serde_json::Result<()> + Send>;

impl Reply {
    /// Writes the response line, without its newline.
    ///
    /// Every result type the server stamps is plain data (strings, numbers,
    /// `Value`s, maps with string keys) whose encoding cannot fail, so an
    /// error here is the output's own, and nothing is half written for any
    /// other reason.
    pub fn write_to(self, out: &mut dyn Write) -> io::Result<()> {
        match self {
            Reply::Line(line) => out.write_all(&line),
            Reply::Result(encode) => encode(out).map_err(io::Error::from),
        }
    }

    /// The encoded response line, for a reply that travels to the owner or
    /// is rewritten first.
    pub fn into_line(self) -> Vec<u8> {
        match self {
            Reply::Line(line) => line,
            Reply::Result(encode) => {
                let mut line = Vec::with_capacity(256);
                // Plain data into a Vec: encoding cannot fail (see `write_to`).
                let _ = encode(&mut line);
                line
            }
        }
    }
}

/// Encodes the response for a handler's outcome. An input-required
/// outcome is checked against the request's declared capabilities and its
/// state sealed first (see `mrtr`).
pub(crate) fn outcome<T: Stamp + Send + 'static>(
    inner: &Inner,
    ctx: &RequestContext,
    method: &str,
    digest: &dyn Fn() -> String,
    res: Result<Outcome<T>, ErrorObject>,
) -> Reply {
    match res {
        Ok(Outcome::Complete(result)) => response(inner, ctx.id(), Ok(result)),
        Ok(Outcome::InputRequired(mut result)) => {
            result.result_type = Some(ResultType::InputRequired);
            match inner
                .sealer
                .seal(&mut result, method, &digest(), ctx.meta())
            {
                Ok(()) => response(inner, ctx.id(), Ok(result)),
                Err(e) => response::<Value>(inner, ctx.id(), Err(e)),
            }
        }
        Err(e) => response::<Value>(inner, ctx.id(), Err(e)),
    }
}

/// Stamps a result for its response, or encodes the error response.
pub(crate) fn response<T: Stamp + Send + 'static>(
    inner: &Inner,
    id: &RequestId,
    res: Result<T, ErrorObject>,
) -> Reply {
    match res {
        Ok(mut result) => {
            result.stamp(&inner.info_value);
            let id = id.clone();
            Reply::Result(Box::new(move |out| encode_result(out, &id, &result)))
        }
        Err(error) => {
            let mut line = Vec::with_capacity(128);
            encode_error(&mut line, Some(id), &error);
            Reply::Line(line)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::CallToolResult;

    #[test]
    fn a_result_streamed_to_the_output_is_the_line_a_worker_sends() {
        let reply = || {
            let mut result = CallToolResult::text("a \"quoted\"\nline");
            result.stamp(&serde_json::json!({ "name": "s", "version": "1" }));
            let id = RequestId::Number(7);
            Reply::Result(Box::new(move |out| encode_result(out, &id, &result)))
        };
        let mut streamed = Vec::new();
        reply().write_to(&mut streamed).unwrap();
        assert_eq!(streamed, reply().into_line());
        assert_eq!(
            String::from_utf8(streamed).unwrap(),
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a \"quoted\"\nline"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}}"#
        );
    }
}

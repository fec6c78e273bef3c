//! Encoding replies: every result is stamped with `resultType` and the
//! server's identity before it goes on the wire.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::jsonrpc::{ErrorObject, RequestId, ResultResponse, encode_error};
use crate::outcome::Outcome;
use crate::server::Inner;
use crate::server::context::RequestContext;
use crate::server::encode::AppendToResult;
use crate::server::out::Out;
use crate::types::{
    DiscoverResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, Meta, ResultType, meta_key,
};

/// A result type that carries `resultType` and `_meta`, which the server
/// stamps on every result (spec 2026-07-28 basic/index: every result MUST
/// include `resultType`; servers SHOULD include `serverInfo` in `_meta`).
pub(crate) trait Stamp: Serialize {
    /// Fills `resultType` (when absent: `complete`) and, when the result
    /// has a `_meta` of its own, `serverInfo` in it (unless set). Returns
    /// whether it has none, and `_meta` is its last member: the server's
    /// `_meta`, encoded once ([`Inner::info_meta`]), is then appended as
    /// the result is encoded, which costs a copy instead of building,
    /// encoding and dropping a map for every reply.
    fn stamp(&mut self, server_info: &Value) -> bool;

    /// Takes back what only 2026-07-28 results carry (`resultType`,
    /// `ttlMs`, `cacheScope`, the server's `_meta` entry), for a legacy
    /// client. `false`, and nothing changed, unless it is a complete
    /// result (a request for input or a task is rewritten by the legacy
    /// code, `legacy::downgrade`).
    #[cfg(feature = "legacy")]
    fn unstamp(&mut self) -> bool;
}

#[cfg(feature = "legacy")]
fn unstamp_fields(result_type: &mut Option<ResultType>, meta: &mut Option<Meta>) -> bool {
    if result_type
        .as_ref()
        .is_some_and(|t| *t != ResultType::Complete)
    {
        return false;
    }
    *result_type = None;
    if let Some(entries) = meta {
        entries.remove(meta_key::SERVER_INFO);
        if entries.is_empty() {
            *meta = None;
        }
    }
    true
}

fn stamp_fields(
    result_type: &mut Option<ResultType>,
    meta: &mut Option<Meta>,
    server_info: &Value,
) -> bool {
    result_type.get_or_insert(ResultType::Complete);
    let Some(meta) = meta else {
        return true;
    };
    meta.entry(meta_key::SERVER_INFO)
        .or_insert_with(|| server_info.clone());
    false
}

// One line per result type; a macro keeps the list readable. Each of them
// declares `meta` (`_meta`) as its last field; those after `cached:` also
// carry `ttlMs` and `cacheScope`.
macro_rules! impl_stamp {
    ($($ty:ty),* ; cached: $($cached:ty),*) => {
        $(impl Stamp for $ty {
            fn stamp(&mut self, server_info: &Value) -> bool {
                stamp_fields(&mut self.result_type, &mut self.meta, server_info)
            }
            #[cfg(feature = "legacy")]
            fn unstamp(&mut self) -> bool {
                unstamp_fields(&mut self.result_type, &mut self.meta)
            }
        })*
        $(impl Stamp for $cached {
            fn stamp(&mut self, server_info: &Value) -> bool {
                stamp_fields(&mut self.result_type, &mut self.meta, server_info)
            }
            #[cfg(feature = "legacy")]
            fn unstamp(&mut self) -> bool {
                let done = unstamp_fields(&mut self.result_type, &mut self.meta);
                if done {
                    (self.ttl_ms, self.cache_scope) = (None, None);
                }
                done
            }
        })*
    };
}

impl_stamp!(
    crate::types::CallToolResult,
    crate::types::GetPromptResult,
    crate::types::CompleteResult,
    crate::types::InputRequiredResult,
    crate::types::CreateTaskResult,
    crate::types::GetTaskResult;
    cached: crate::types::ReadResourceResult,
    DiscoverResult,
    ListToolsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListPromptsResult
);

/// Results of application-defined methods: stamped when they are objects.
/// Their members are encoded in key order, so `_meta` is built into them.
impl Stamp for Value {
    fn stamp(&mut self, server_info: &Value) -> bool {
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
        false
    }

    #[cfg(feature = "legacy")]
    fn unstamp(&mut self) -> bool {
        let Value::Object(map) = self else {
            return true;
        };
        if map.get("resultType").is_some_and(|t| t != "complete") {
            return false;
        }
        for key in ["resultType", "ttlMs", "cacheScope"] {
            map.remove(key);
        }
        if let Some(Value::Object(meta)) = map.get_mut("_meta") {
            meta.remove(meta_key::SERVER_INFO);
            if meta.is_empty() {
                map.remove("_meta");
            }
        }
        true
    }
}

/// A request's response, as its work hands it to whoever writes it.
pub(crate) enum Reply {
    /// Encoded already: errors, and replies a wrapper rewrote; `error` is
    /// the code of an error response (a writer of lines is told it:
    /// `conn::LineKind`).
    Line { line: Vec<u8>, error: Option<i32> },
    /// A stamped result, encoded only when it is written: an inline
    /// handler's result goes straight into the output, so a large result
    /// is never held twice (as the value and as its JSON).
    Result(Box<dyn EncodeResult>),
    /// Not done: the rest of an inline request's work, which may wait
    /// (for a legacy client's answers), and so runs on the pool as the same
    /// request (`ConnHandle::run_inline`). Only an inline job's work
    /// returns it; nothing writes it.
    #[cfg_attr(
        not(feature = "legacy"),
        expect(dead_code, reason = "only the legacy era's asks wait")
    )]
    Later(Box<dyn FnOnce(&RequestContext) -> Reply + Send>),
}

/// A stamped result response, encoded into the output or into a line.
pub(crate) trait EncodeResult: Send {
    /// Encodes the response into the output (no newline).
    fn encode_into(&self, out: &mut Out) -> serde_json::Result<()>;
    /// Encodes the response into a new line (no newline).
    fn encode_line(&self) -> Vec<u8>;
    /// Makes it the response a legacy client gets ([`Stamp::unstamp`]):
    /// `false`, and nothing changed, unless it is a complete result.
    #[cfg(feature = "legacy")]
    fn unstamp(&mut self) -> bool;
}

/// A result response: its id, its stamped result and, when the result had
/// no `_meta`, the server's encoded `_meta` to append to it.
struct Stamped<T> {
    id: RequestId,
    result: T,
    meta: Option<Arc<[u8]>>,
}

impl<T: Serialize + Send> Stamped<T> {
    fn encode(&self, out: &mut Out) -> serde_json::Result<()> {
        let response = ResultResponse {
            jsonrpc: "2.0",
            id: &self.id,
            result: &self.result,
        };
        let meta = self.meta.as_deref().unwrap_or_default();
        let formatter = AppendToResult { depth: 0, meta };
        response.serialize(&mut serde_json::Serializer::with_formatter(out, formatter))
    }
}

impl<T: Stamp + Send> EncodeResult for Stamped<T> {
    fn encode_into(&self, out: &mut Out) -> serde_json::Result<()> {
        self.encode(out)
    }

    fn encode_line(&self) -> Vec<u8> {
        let mut line = Out::with_capacity(256);
        // Plain data into a buffer: encoding cannot fail (see `write_to`).
        let _ = self.encode(&mut line);
        line.into_vec()
    }

    #[cfg(feature = "legacy")]
    fn unstamp(&mut self) -> bool {
        let done = self.result.unstamp();
        if done {
            self.meta = None;
        }
        done
    }
}

/// The server's `_meta` as [`Stamped`] appends it to a result.
pub(crate) fn encode_info_meta(server_info: &Value) -> Arc<[u8]> {
    let mut meta = format!(",\"_meta\":{{\"{}\":", meta_key::SERVER_INFO).into_bytes();
    // A `Value` into a Vec: encoding cannot fail.
    let _ = serde_json::to_writer(&mut meta, server_info);
    meta.push(b'}');
    meta.into()
}

impl Reply {
    /// Appends the response line to `out`, without its newline.
    ///
    /// Every result type the server stamps is plain data (strings, numbers,
    /// `Value`s, maps with string keys) whose encoding cannot fail; the
    /// caller still takes back a line an error left half written.
    pub fn write_to(self, out: &mut Out) -> serde_json::Result<()> {
        match self {
            Reply::Line { line, .. } => {
                out.push(&line);
                Ok(())
            }
            Reply::Result(result) => result.encode_into(out),
            Reply::Later(_) => Err(serde::ser::Error::custom(
                "the rest of a request is no reply",
            )),
        }
    }

    /// The encoded response line, for a reply that is encoded before the
    /// lock or rewritten first; empty (nothing is written) for the rest of
    /// a request, which its caller runs first.
    pub fn into_line(self) -> Vec<u8> {
        match self {
            Reply::Line { line, .. } => line,
            Reply::Result(result) => result.encode_line(),
            Reply::Later(_) => Vec::new(),
        }
    }

    /// The reply encoded ([`Reply::into_line`]), its error code kept.
    pub fn encoded(self) -> Reply {
        let error = self.error_code();
        Reply::Line {
            line: self.into_line(),
            error,
        }
    }

    /// The code of an error response; `None` for a result.
    pub fn error_code(&self) -> Option<i32> {
        match self {
            Reply::Line { error, .. } => *error,
            Reply::Result(_) | Reply::Later(_) => None,
        }
    }

    /// An error response to request `id`.
    pub fn error(id: &RequestId, error: &ErrorObject) -> Reply {
        let mut line = Vec::with_capacity(128);
        encode_error(&mut line, Some(id), error);
        Reply::Line {
            line,
            error: Some(error.code),
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
            let append = result.stamp(&inner.info_value);
            Reply::Result(Box::new(Stamped {
                id: id.clone(),
                result,
                meta: append.then(|| Arc::clone(&inner.info_meta)),
            }))
        }
        Err(error) => Reply::error(id, &error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::CallToolResult;
    use std::io::Write;

    /// What a reply writes into a connection's output, and its line.
    fn both(reply: impl Fn() -> Reply) -> (String, String) {
        let mut out = Out::with_capacity(8);
        out.write_all(b"earlier line\n").unwrap();
        reply().write_to(&mut out).unwrap();
        let streamed = String::from_utf8(out.into_vec().split_off(13)).unwrap();
        (streamed, String::from_utf8(reply().into_line()).unwrap())
    }

    fn inner_info() -> (Value, Arc<[u8]>) {
        let info = serde_json::json!({ "name": "s", "version": "1" });
        let meta = encode_info_meta(&info);
        (info, meta)
    }

    fn stamped(mut result: CallToolResult) -> Reply {
        let (info, meta) = inner_info();
        let append = result.stamp(&info);
        Reply::Result(Box::new(Stamped {
            id: RequestId::Number(7),
            result,
            meta: append.then_some(meta),
        }))
    }

    #[cfg(feature = "legacy")]
    #[test]
    fn an_unstamped_result_is_the_downgraded_line() {
        use crate::server::legacy::downgrade::downgrade;
        let results = || {
            let mut own_meta = CallToolResult::text("b");
            own_meta.meta = Some(Map::from_iter([("k".to_string(), Value::from(1))]));
            [CallToolResult::text("a \"q\""), own_meta]
        };
        for (result, again) in results().into_iter().zip(results()) {
            let (downgraded, _) =
                downgrade(stamped(result).into_line(), "tools/call", "2025-11-25");
            let Reply::Result(mut unstamped) = stamped(again) else {
                unreachable!("a result")
            };
            assert!(unstamped.unstamp());
            assert_eq!(
                String::from_utf8(unstamped.encode_line()).unwrap(),
                String::from_utf8(downgraded).unwrap()
            );
        }
        // A request for input is left to the rewrite.
        let mut asking = CallToolResult::text("c");
        asking.result_type = Some(ResultType::InputRequired);
        let Reply::Result(mut asking) = stamped(asking) else {
            unreachable!("a result")
        };
        assert!(!asking.unstamp());
    }

    #[test]
    fn a_result_streamed_to_the_output_is_the_line_a_worker_sends() {
        let (streamed, line) = both(|| stamped(CallToolResult::text("a \"quoted\"\nline")));
        assert_eq!(streamed, line);
        assert_eq!(
            line,
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a \"quoted\"\nline"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}}"#
        );
    }

    #[test]
    fn server_info_joins_a_meta_of_the_results_own_or_is_appended_the_same() {
        let nested = || {
            let mut result = CallToolResult::text("x");
            result.structured_content = Some(serde_json::json!({ "a": { "b": {} } }));
            result
        };
        let (appended, _) = both(|| stamped(nested()));
        let (built_in, _) = both(|| {
            let mut result = nested();
            result.meta = Some(Map::new());
            stamped(result)
        });
        assert_eq!(appended, built_in);
        let value: Value = serde_json::from_str(&appended).unwrap();
        assert_eq!(
            value["result"]["structuredContent"]["a"]["b"],
            serde_json::json!({})
        );
        assert_eq!(
            value["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "s"
        );
        // A meta the handler set keeps its own members, and its serverInfo.
        let (own, _) = both(|| {
            let mut result = CallToolResult::text("x");
            let info = serde_json::json!({ "name": "handler's" });
            result.meta = Some(Map::from_iter([
                ("k".to_string(), Value::from(1)),
                (meta_key::SERVER_INFO.to_string(), info),
            ]));
            stamped(result)
        });
        assert!(
            own.ends_with(
                r#""_meta":{"io.modelcontextprotocol/serverInfo":{"name":"handler's"},"k":1}}}"#
            ),
            "{own}"
        );
    }
}

//! Encoding replies: every result is stamped with `resultType` and the
//! server's identity before it goes on the wire.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::context::RequestContext;
use crate::jsonrpc::{ErrorObject, RequestId, encode_error, encode_result};
use crate::server::Inner;
use crate::server::handlers::Outcome;
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

/// Encodes the response for a handler's outcome. An input-required
/// outcome is checked against the request's declared capabilities and its
/// state sealed first (see `mrtr`).
pub(crate) fn outcome<T: Stamp>(
    inner: &Inner,
    ctx: &RequestContext,
    method: &str,
    digest: &dyn Fn() -> String,
    res: Result<Outcome<T>, ErrorObject>,
) -> Vec<u8> {
    match res {
        Ok(Outcome::Complete(result)) => finish(inner, ctx.id(), Ok(result)),
        Ok(Outcome::InputRequired(mut result)) => {
            result.result_type = Some(ResultType::InputRequired);
            match inner
                .sealer
                .seal(&mut result, method, &digest(), ctx.meta())
            {
                Ok(()) => finish(inner, ctx.id(), Ok(result)),
                Err(e) => finish::<Value>(inner, ctx.id(), Err(e)),
            }
        }
        Err(e) => finish::<Value>(inner, ctx.id(), Err(e)),
    }
}

/// Stamps a result and encodes the response line.
pub(crate) fn finish<T: Stamp>(
    inner: &Inner,
    id: &RequestId,
    res: Result<T, ErrorObject>,
) -> Vec<u8> {
    let mut line = Vec::with_capacity(256);
    match res {
        Ok(mut result) => {
            result.stamp(&inner.info_value);
            if let Err(e) = encode_result(&mut line, id, &result) {
                line.clear();
                let error =
                    ErrorObject::internal_error(format!("result could not be encoded: {e}"));
                encode_error(&mut line, Some(id), &error);
            }
        }
        Err(error) => encode_error(&mut line, Some(id), &error),
    }
    line
}

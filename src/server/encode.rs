//! The one JSON serializer of what the server encodes: its replies
//! (`server::reply`, a result with the server's `_meta` appended) and what
//! it encodes for itself (a task for its update, a result or an error for
//! its size), so that each type has one encoder in the binary, not one per
//! serializer.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::Formatter;

use crate::server::out::Out;

/// serde_json's compact encoding, with `meta` (`,"_meta":{..}`, or
/// nothing) written before the end of the result: the one object two
/// levels deep in a result response (`{"jsonrpc":..,"id":..,"result":{..}}`;
/// an id is never an object). The result is never empty: it has
/// `resultType`.
pub(crate) struct AppendToResult<'a> {
    pub depth: usize,
    pub meta: &'a [u8],
}

impl Formatter for AppendToResult<'_> {
    fn begin_object<W: ?Sized + Write>(&mut self, out: &mut W) -> io::Result<()> {
        self.depth += 1;
        out.write_all(b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, out: &mut W) -> io::Result<()> {
        if self.depth == 2 {
            out.write_all(self.meta)?;
        }
        self.depth -= 1;
        out.write_all(b"}")
    }
}

/// `value` as compact JSON, through the serializer the replies are
/// encoded with (`server::reply`: an [`Out`], [`AppendToResult`] with
/// nothing to append): a type the server both replies with and encodes
/// for itself (a task for its update, a result or an error for its size)
/// has one encoder in the binary, not one per serializer.
pub(crate) fn to_vec<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<Vec<u8>> {
    let mut out = Out::with_capacity(128);
    let formatter = AppendToResult {
        depth: 0,
        meta: &[],
    };
    value.serialize(&mut serde_json::Serializer::with_formatter(
        &mut out, formatter,
    ))?;
    Ok(out.into_vec())
}

#[cfg(test)]
mod tests {
    use serde::Serialize;
    use serde_json::{Value, json};

    use crate::jsonrpc::ErrorObject;
    use crate::types::DetailedTask;

    fn same<T: Serialize + ?Sized>(value: &T) {
        let ours = super::to_vec(value).unwrap();
        let theirs = serde_json::to_vec(value).unwrap();
        assert_eq!(
            String::from_utf8(ours).unwrap(),
            String::from_utf8(theirs).unwrap()
        );
    }

    #[test]
    fn to_vec_writes_serde_jsons_compact_bytes_at_every_depth_and_shape() {
        let deep = json!({"a":{"b":{"c":{"d":[{"e":{}},{},[{"f":[]}]]}}},"g":[{"h":{"i":1}}]});
        let task: DetailedTask = serde_json::from_value(json!({
            "taskId": "t\"1\u{2028}\u{7f}\u{1}",
            "status": "input_required",
            "statusMessage": "wait\n",
            "createdAt": "2026-07-28T10:30:00.123Z",
            "lastUpdatedAt": "2026-07-28T10:30:00.123Z",
            "ttlMs": null,
            "pollIntervalMs": 5,
            "inputRequests": {
                "confirm": {"method": "elicitation/create", "params": {
                    "mode": "form", "message": "ok?",
                    "requestedSchema": {"type": "object", "properties": {
                        "x": {"type": "number", "minimum": -0.0, "maximum": 1e300}}}}},
                "roots": {"method": "roots/list"},
                "odd": {"method": "x/y", "params": {"_meta": {"k": [deep.clone()]}}}
            },
            "result": {"content": [{"type": "text", "text": "é😀"}], "structuredContent": deep.clone(), "isError": false},
            "error": {"code": -32603, "message": "m", "data": [deep.clone(), 1.5, -0.0, 18446744073709551615u64, -9223372036854775808i64]}
        }))
        .unwrap();
        same(&task);
        same(&task.task);
        same(&task.result);
        same(task.error.as_ref().unwrap());
        same(&ErrorObject::internal_error("x"));
        for value in [
            deep.clone(),
            json!([deep.clone(), [deep.clone()]]),
            json!([{"a":{"b":{}}}, {"c":{"d":{}}}]),
            json!("top \"string\" \\ \u{0}"),
            json!(null),
            json!(3.25),
            json!({}),
            json!([]),
            json!({"a":{}}),
        ] {
            same(&value);
        }
        #[derive(Serialize)]
        struct Floats {
            nan: f64,
            inf: f32,
            raw: Box<serde_json::value::RawValue>,
            empty: Empty,
            unit: (),
            bytes: &'static [u8],
        }
        #[derive(Serialize)]
        struct Empty {}
        same(&Floats {
            nan: f64::NAN,
            inf: f32::INFINITY,
            raw: serde_json::value::RawValue::from_string(r#"{ "a" : [ 1 , {} ] }"#.into())
                .unwrap(),
            empty: Empty {},
            unit: (),
            bytes: b"\x00\xff",
        });
        let _: Value = serde_json::from_slice(&super::to_vec(&task).unwrap()).unwrap();
    }
}

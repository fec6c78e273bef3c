//! Reading the unions the schema tags with `"type"`.
//!
//! serde's derive for an internally tagged enum buffers the object into a
//! content tree of its own and instantiates every variant's visitor for
//! that tree as well as for every input the enum is read from. Reading the
//! object once into a `serde_json::Value`, and the variant from that value,
//! accepts the same input with one instantiation per variant: for the
//! three unions here, 31 KB less of the echo server's binary
//! (BENCHMARKS.md). The variant is read from a `&Value`, as
//! `InputResponse`'s accessors read their answers, so that each variant's
//! struct has one deserializer (19 KB less of the server-only echo than
//! reading it from the owned value, for one more copy of its strings).

use serde::Deserialize;
use serde::de::{Deserializer, Error, Unexpected};
use serde_json::Value;

/// Parses the whole object (its `type` key included, which the variant
/// structs ignore) as one variant.
pub(crate) type Variant<T> = fn(&Value) -> serde_json::Result<T>;

/// Reads a union tagged by `"type"`: `variant` gives the parser for a tag,
/// or `None` for a tag it does not know; `tags` lists the known ones for
/// the error message.
pub(crate) fn deserialize<'de, D, T>(
    deserializer: D,
    tags: &'static [&'static str],
    variant: impl FnOnce(&str) -> Option<Variant<T>>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    let value = Value::deserialize(deserializer)?;
    let parse = match value.get("type") {
        Some(Value::String(tag)) => {
            variant(tag).ok_or_else(|| D::Error::unknown_variant(tag, tags))?
        }
        Some(other) => return Err(D::Error::invalid_type(unexpected(other), &"a string tag")),
        None if value.is_object() => return Err(D::Error::missing_field("type")),
        None => {
            return Err(D::Error::invalid_type(
                unexpected(&value),
                &"an object tagged by \"type\"",
            ));
        }
    };
    parse(&value).map_err(D::Error::custom)
}

fn unexpected(value: &Value) -> Unexpected<'_> {
    match value {
        Value::Null => Unexpected::Unit,
        Value::Bool(b) => Unexpected::Bool(*b),
        Value::Number(_) => Unexpected::Other("a number"),
        Value::String(s) => Unexpected::Str(s),
        Value::Array(_) => Unexpected::Seq,
        Value::Object(_) => Unexpected::Map,
    }
}

#[cfg(test)]
mod tests {
    use crate::types::{ContentBlock, SamplingMessageContentBlock, TextContent};

    fn error(json: &str) -> String {
        serde_json::from_str::<ContentBlock>(json)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_block_is_read_by_its_tag_and_keeps_ignoring_unknown_keys() {
        let block: ContentBlock =
            serde_json::from_str(r#"{"type":"text","text":"hi","extra":1}"#).unwrap();
        assert_eq!(block, ContentBlock::Text(TextContent::new("hi")));
        let block: SamplingMessageContentBlock = serde_json::from_str(
            r#"{"type":"tool_result","toolUseId":"t1","content":[{"type":"text","text":"4"}]}"#,
        )
        .unwrap();
        assert!(
            matches!(block, SamplingMessageContentBlock::ToolResult(r) if r.content == [ContentBlock::text("4")])
        );
    }

    #[test]
    fn a_bad_tag_or_shape_says_what_is_wrong() {
        assert_eq!(
            error(r#"{"type":"video"}"#),
            "unknown variant `video`, expected one of `text`, `image`, `audio`, `resource_link`, `resource`"
        );
        assert_eq!(error(r#"{"text":"x"}"#), "missing field `type`");
        assert_eq!(error(r#"{"type":"text"}"#), "missing field `text`");
        assert_eq!(
            error(r#"{"type":7}"#),
            "invalid type: a number, expected a string tag"
        );
        assert_eq!(
            error(r#""hi""#),
            r#"invalid type: string "hi", expected an object tagged by "type""#
        );
    }
}

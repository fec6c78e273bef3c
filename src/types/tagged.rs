//! Reading the unions the schema tags with `"type"`.
//!
//! serde's derive for an internally tagged enum buffers the object into a
//! content tree of its own and instantiates every variant's visitor for
//! that tree as well as for every input the enum is read from. Reading the
//! object once into a `serde_json::Value`, and the variant from that value,
//! accepts the same input with one instantiation per variant: for the
//! three unions here, 31 KB less of the echo server's binary
//! (BENCHMARKS.md). With the client, the variant is read from the owned
//! value, its strings moved: a tool result with a 20 MB image peaks at
//! one copy of it, not two (review size11,
//! `memory::peak_memory_of_reading_a_20_mb_image_result`). Without it, from
//! a `&Value`, as `InputResponse`'s accessors read their answers, so that
//! each variant's struct has one deserializer: 19 KB less of the
//! server-only echo, for one more copy of an answer's strings.

use serde::Deserialize;
use serde::de::{Deserializer, Error, Unexpected};
use serde_json::Value;

/// Parses the whole object (its `type` key included, which the variant
/// structs ignore) as one variant: owned with the client, borrowed
/// without it (the module docs say why).
#[cfg(feature = "client")]
pub(crate) type Variant<T> = fn(Value) -> serde_json::Result<T>;
/// Parses the whole object (its `type` key included, which the variant
/// structs ignore) as one variant: owned with the client, borrowed
/// without it (the module docs say why).
#[cfg(not(feature = "client"))]
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
    #[cfg(feature = "client")]
    let read = parse(value);
    #[cfg(not(feature = "client"))]
    let read = parse(&value);
    read.map_err(D::Error::custom)
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

    /// A union read as it was before 20fa1da: the variant from the owned
    /// value.
    fn by_owned_value<T>(
        json: &str,
        variant: fn(&str, serde_json::Value) -> Option<serde_json::Result<T>>,
    ) -> Result<T, String> {
        let value: serde_json::Value = serde_json::from_str(json).map_err(|e| e.to_string())?;
        let tag = value.get("type").and_then(|t| t.as_str()).unwrap_or("");
        match variant(tag, value.clone()) {
            Some(read) => read.map_err(|e| e.to_string()),
            None => Err("tag".into()),
        }
    }

    /// Claim (review size11): reading a variant from `&Value` (20fa1da)
    /// accepts and refuses what reading it from the owned value did, with
    /// the same message.
    #[test]
    fn a_variant_read_from_a_reference_is_read_as_from_the_owned_value() {
        use serde_json::from_value as read;

        use crate::types::CompletionReference;
        type Block = SamplingMessageContentBlock;
        fn content(tag: &str, v: serde_json::Value) -> Option<serde_json::Result<ContentBlock>> {
            Some(match tag {
                "text" => read(v).map(ContentBlock::Text),
                "image" => read(v).map(ContentBlock::Image),
                "audio" => read(v).map(ContentBlock::Audio),
                "resource_link" => read(v).map(ContentBlock::ResourceLink),
                "resource" => read(v).map(ContentBlock::Resource),
                _ => return None,
            })
        }
        fn sampling(tag: &str, v: serde_json::Value) -> Option<serde_json::Result<Block>> {
            Some(match tag {
                "text" => read(v).map(Block::Text),
                "image" => read(v).map(Block::Image),
                "audio" => read(v).map(Block::Audio),
                "tool_use" => read(v).map(Block::ToolUse),
                "tool_result" => read(v).map(Block::ToolResult),
                _ => return None,
            })
        }
        fn reference(
            tag: &str,
            v: serde_json::Value,
        ) -> Option<serde_json::Result<CompletionReference>> {
            Some(match tag {
                "ref/prompt" => read(v).map(CompletionReference::Prompt),
                "ref/resource" => read(v).map(CompletionReference::Resource),
                _ => return None,
            })
        }
        let extras = [
            "",
            r#","extra":{"a":[1]}"#,
            r#","_meta":{"k":1}"#,
            r#","_meta":5"#,
            r#","_meta":null"#,
            r#","_meta":"x""#,
            r#","annotations":{"audience":["user"],"priority":0.5,"unknown":1}"#,
            r#","annotations":{"priority":"0.5"}"#,
            r#","annotations":{"priority":1}"#,
            r#","annotations":{"priority":18446744073709551616}"#,
            r#","annotations":[["user","assistant"],0.25,"2026-07-28"]"#,
            r#","annotations":[["user"]]"#,
            r#","annotations":[["user"],1,"x",4]"#,
            r#","annotations":{"audience":["robot"]}"#,
            r#","annotations":{"audience":"user"}"#,
            r#","annotations":[]"#,
            r#","annotations":null"#,
            r#","size":3"#,
            r#","size":"3""#,
            r#","size":3.0"#,
            r#","size":-1"#,
            r#","size":18446744073709551615"#,
            r#","isError":"true""#,
            r#","isError":true"#,
            r#","input":[]"#,
            r#","text":"dup""#,
            r#","title":7"#,
            r#","structuredContent":{"a":1}"#,
        ];
        let bodies = [
            r#""type":"text","text":"hi""#,
            r#""type":"text","text":7"#,
            r#""type":"text","text":null"#,
            r#""type":"text","text":["hi"]"#,
            r#""type":"image","data":"AAAA","mimeType":"image/png""#,
            r#""type":"image","data":"AAAA""#,
            r#""type":"audio","data":"AAAA","mimeType":"audio/wav""#,
            r#""type":"resource_link","uri":"file:///a","name":"a""#,
            r#""type":"resource","resource":{"uri":"file:///a","text":"t"}"#,
            r#""type":"resource","resource":{"uri":"file:///a","blob":"AAAA","mimeType":"x/y"}"#,
            r#""type":"resource","resource":{"uri":"file:///a"}"#,
            r#""type":"resource","resource":["file:///a","t"]"#,
            r#""type":"tool_use","id":"1","name":"n","input":{"a":1}"#,
            r#""type":"tool_result","toolUseId":"1","content":[{"type":"image","data":"A","mimeType":"m"}]"#,
            r#""type":"tool_result","toolUseId":"1","content":[{"type":"nope"}]"#,
            r#""type":"tool_result","toolUseId":"1","content":{"type":"text","text":"x"}"#,
            r#""type":"ref/prompt","name":"p""#,
            r#""type":"ref/resource","uri":"u""#,
            r#""type":"ref/resource","uri":7"#,
            r#""type":"ref/prompt""#,
        ];
        for body in bodies {
            for extra in extras {
                for json in [
                    format!("{{{body}{extra}}}"),
                    format!("{{{extra:.0}{body}{extra}}}"),
                ] {
                    let (ours, theirs) = (
                        serde_json::from_str::<ContentBlock>(&json).map_err(|e| e.to_string()),
                        by_owned_value(&json, content),
                    );
                    if theirs != Err("tag".into()) {
                        assert_eq!(format!("{ours:?}"), format!("{theirs:?}"), "{json}");
                    }
                    let (ours, theirs) = (
                        serde_json::from_str::<Block>(&json).map_err(|e| e.to_string()),
                        by_owned_value(&json, sampling),
                    );
                    if theirs != Err("tag".into()) {
                        assert_eq!(format!("{ours:?}"), format!("{theirs:?}"), "{json}");
                    }
                    let (ours, theirs) = (
                        serde_json::from_str::<CompletionReference>(&json)
                            .map_err(|e| e.to_string()),
                        by_owned_value(&json, reference),
                    );
                    if theirs != Err("tag".into()) {
                        assert_eq!(format!("{ours:?}"), format!("{theirs:?}"), "{json}");
                    }
                }
            }
        }
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

#[cfg(test)]
mod memory {
    use crate::types::{CallToolResult, ContentBlock};

    /// `VmRSS` or `VmHWM` of this process, in bytes.
    fn status(field: &str) -> usize {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with(field)).unwrap();
        let kb: usize = line[field.len() + 1..]
            .trim()
            .trim_end_matches(" kB")
            .parse()
            .unwrap();
        kb * 1024
    }

    /// Review size11: the peak memory of a client reading a tool result
    /// with a 20 MB image (its base64 text), above what the line holds.
    /// Reading the variant from `&Value` (20fa1da) copied its data once
    /// more while the buffered value was alive: 41.7 MB; with the client
    /// the variant is read from the owned value again: 20.6 MB (release
    /// build). A measurement, not a gate:
    /// run alone (`cargo test --lib -- --ignored --test-threads=1
    /// peak_memory`).
    #[test]
    #[ignore = "measures this process's peak memory: run alone"]
    fn peak_memory_of_reading_a_20_mb_image_result() {
        const MB: usize = 1 << 20;
        let data = "A".repeat(20 * MB);
        let line =
            format!(r#"{{"content":[{{"type":"image","data":"{data}","mimeType":"image/png"}}]}}"#);
        drop(data);
        // Resets VmHWM to the current RSS (Linux 4.0 and later).
        std::fs::write("/proc/self/clear_refs", "5").unwrap();
        let before = status("VmRSS:");
        let result: CallToolResult = serde_json::from_str(&line).unwrap();
        let peak = status("VmHWM:") - before;
        assert!(matches!(&result.content[0], ContentBlock::Image(i) if i.data.len() == 20 * MB));
        eprintln!(
            "peak above the line while reading a 20 MB image result: {:.1} MB",
            peak as f64 / MB as f64
        );
    }
}

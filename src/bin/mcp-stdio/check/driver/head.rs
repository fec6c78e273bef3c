//! What a response says at its top level ([`Head`]), and whether it is
//! one well-formed response ([`malformed`]): read past the values the
//! checker cannot read.

use serde_json::Value;

/// What a response says at its top level, read past the values the
/// checker cannot read: `id`, `result` and `error` are each kept as
/// written (`RawValue` reads a number past a double's range, any nesting
/// and a lone surrogate), every time they come.
pub struct Head {
    /// The last `id` (`null` when there is none), as serde_json's `Value`
    /// keeps the last of a name that comes twice.
    pub id: Value,
    /// An `error` response, not a `result`.
    pub error: bool,
    /// Why it is not one well-formed response, when it is not.
    pub malformed: Option<String>,
}

/// The `id`, `result` and `error` members of an object, in order, each
/// time they come; the other members read past.
struct Members(Vec<(String, Box<serde_json::value::RawValue>)>);

impl<'de> serde::Deserialize<'de> for Members {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Members, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Members;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Members, A::Error> {
                let mut kept = Vec::new();
                while let Some(name) = map.next_key::<String>()? {
                    if matches!(name.as_str(), "id" | "result" | "error") {
                        kept.push((name, map.next_value()?));
                    } else {
                        map.next_value::<serde::de::IgnoredAny>()?;
                    }
                }
                Ok(Members(kept))
            }
        }
        // Only an object: an array is refused, not read as a struct.
        d.deserialize_map(Visit)
    }
}

impl Head {
    /// The head of the response `text`; `None` when it is not an object
    /// with a `result` or an `error`, or its id cannot be read.
    pub fn of(text: &str) -> Option<Head> {
        let Members(members) = serde_json::from_str(text).ok()?;
        let count = |name: &str| members.iter().filter(|(n, _)| n == name).count();
        let last = |name: &str| {
            members
                .iter()
                .rev()
                .find(|(n, _)| n == name)
                .map(|(_, raw)| raw.get().trim_start())
        };
        let (results, errors) = (count("result"), count("error"));
        if results + errors == 0 {
            return None;
        }
        let id = match last("id") {
            Some(raw) => serde_json::from_str(raw).ok()?,
            None => Value::Null,
        };
        let twice = ["id", "result", "error"]
            .into_iter()
            .find(|name| count(name) > 1);
        let not_object = ["result", "error"]
            .into_iter()
            .find_map(|name| Some((name, last(name).filter(|raw| !raw.starts_with('{'))?)));
        let malformed = match (twice, not_object) {
            (Some(name), _) => Some(format!(
                "`{name}` twice: RFC 8259 says an object's names SHOULD be unique, and readers differ on which they keep"
            )),
            _ if results > 0 && errors > 0 => Some(
                "both `result` and `error`: JSON-RPC 2.0 says both MUST NOT be included".into(),
            ),
            (None, Some((name, raw))) => Some(format!(
                "`{name}` is {}, not an object",
                crate::check::short(raw, 40)
            )),
            (None, None) => None,
        };
        Some(Head {
            id,
            error: errors > 0,
            malformed,
        })
    }
}

/// Why the response `text` is not one well-formed response
/// ([`Head::malformed`]: a member twice, both `result` and `error`, a
/// `result` or `error` that is not an object), readable or not; `None`
/// for a well-formed one, and for what is no response. The one judgement
/// of every answer: the session's (`answer_with`) and the `http.*`
/// checks' that read a body themselves (`http_link::exchange`).
pub fn malformed(text: &str) -> Option<String> {
    Head::of(text)?.malformed
}

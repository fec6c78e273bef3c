//! A JSON value that keeps its objects' members in the order they came,
//! for buffering a part of a message whose type a field read later decides
//! (`mode` of `ElicitRequestParams`, `method` of `InputRequest`) without
//! losing the order a form's fields were written in
//! ([`Properties`](super::Properties)).
//!
//! Why not `serde_json::Value`: its objects are sorted by key. Why not a
//! `RawValue`: it cannot be read where serde buffers content itself
//! (`#[serde(flatten)]`, as `GetTaskResult` reads a task and its input
//! requests), and this must read anywhere. Off the hot path: only input
//! requests go through it, written back to text and read again as their
//! type.

use std::fmt;

use serde::de::{DeserializeOwned, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Number;

/// A JSON value, its objects in the order they came.
pub(crate) enum Ordered {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Ordered>),
    Object(Vec<(String, Ordered)>),
}

impl Ordered {
    /// Reads the buffered value as `T`.
    pub fn read<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(&serde_json::to_string(self)?)
    }
}

impl Serialize for Ordered {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Ordered::Null => serializer.serialize_unit(),
            Ordered::Bool(b) => serializer.serialize_bool(*b),
            Ordered::Number(n) => n.serialize(serializer),
            Ordered::String(s) => serializer.serialize_str(s),
            Ordered::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Ordered::Object(members) => {
                let mut map = serializer.serialize_map(Some(members.len()))?;
                for (key, value) in members {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Ordered, D::Error> {
        deserializer.deserialize_any(OrderedVisitor)
    }
}

struct OrderedVisitor;

impl<'de> Visitor<'de> for OrderedVisitor {
    type Value = Ordered;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Ordered, E> {
        Ok(Ordered::Null)
    }

    fn visit_none<E>(self) -> Result<Ordered, E> {
        Ok(Ordered::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Ordered, D::Error> {
        Ordered::deserialize(deserializer)
    }

    fn visit_bool<E>(self, b: bool) -> Result<Ordered, E> {
        Ok(Ordered::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Ordered, E> {
        Ok(Ordered::Number(n.into()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Ordered, E> {
        Ok(Ordered::Number(n.into()))
    }

    fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<Ordered, E> {
        Number::from_f64(n)
            .map(Ordered::Number)
            .ok_or_else(|| E::custom("a number JSON cannot hold"))
    }

    fn visit_str<E>(self, s: &str) -> Result<Ordered, E> {
        Ok(Ordered::String(s.to_owned()))
    }

    fn visit_string<E>(self, s: String) -> Result<Ordered, E> {
        Ok(Ordered::String(s))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Ordered, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Ordered::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered, A::Error> {
        let mut members = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Ordered>()? {
            members.push((key, value));
        }
        Ok(Ordered::Object(members))
    }
}

/// Reads `T` from a buffered value, as the deserializer's error.
pub(crate) fn read<T: DeserializeOwned, E: serde::de::Error>(value: &Ordered) -> Result<T, E> {
    value.read().map_err(E::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_keep_their_order_through_any_deserializer() {
        let text = r#"{"z":1,"a":[true,null,"s",2.5,-3],"m":{"y":{},"b":[]}}"#;
        let ordered: Ordered = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&ordered).unwrap(), text);
        // From another deserializer than a string's: any value reads.
        let value: serde_json::Value = serde_json::from_str(text).unwrap();
        let from_value = Ordered::deserialize(value).unwrap();
        let again: serde_json::Value = from_value.read().unwrap();
        assert_eq!(
            again,
            serde_json::from_str::<serde_json::Value>(text).unwrap()
        );
    }
}

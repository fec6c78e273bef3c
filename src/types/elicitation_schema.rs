//! The restricted JSON Schemas a form-mode elicitation may ask for (schema
//! `PrimitiveSchemaDefinition` and its members).
//!
//! The schema gives these no tag field. [`PrimitiveSchemaDefinition`]
//! dispatches on `type` and then on which of `oneOf`, `enum`, `enumNames`
//! and `items.anyOf` are present, so each shape maps to exactly one variant.
//! Every struct keeps its own `type`, since `NumberSchema` needs it to tell
//! `number` from `integer`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// One field of a form (schema `PrimitiveSchemaDefinition`).
#[derive(Debug, Clone, PartialEq)]
pub enum PrimitiveSchemaDefinition {
    /// `type: "string"` without `enum` or `oneOf`.
    String(StringSchema),
    /// `type: "number"` or `"integer"`.
    Number(NumberSchema),
    /// `type: "boolean"`.
    Boolean(BooleanSchema),
    /// `type: "string"` with `enum` and no `enumNames`.
    UntitledSingleSelectEnum(UntitledSingleSelectEnumSchema),
    /// `type: "string"` with `oneOf`.
    TitledSingleSelectEnum(TitledSingleSelectEnumSchema),
    /// `type: "array"` whose `items` has `enum`.
    UntitledMultiSelectEnum(UntitledMultiSelectEnumSchema),
    /// `type: "array"` whose `items` has `anyOf`.
    TitledMultiSelectEnum(TitledMultiSelectEnumSchema),
    /// `type: "string"` with `enum` and `enumNames` (deprecated).
    LegacyTitledEnum(LegacyTitledEnumSchema),
}

impl Serialize for PrimitiveSchemaDefinition {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            PrimitiveSchemaDefinition::String(s) => s.serialize(serializer),
            PrimitiveSchemaDefinition::Number(s) => s.serialize(serializer),
            PrimitiveSchemaDefinition::Boolean(s) => s.serialize(serializer),
            PrimitiveSchemaDefinition::UntitledSingleSelectEnum(s) => s.serialize(serializer),
            PrimitiveSchemaDefinition::TitledSingleSelectEnum(s) => s.serialize(serializer),
            PrimitiveSchemaDefinition::UntitledMultiSelectEnum(s) => s.serialize(serializer),
            PrimitiveSchemaDefinition::TitledMultiSelectEnum(s) => s.serialize(serializer),
            PrimitiveSchemaDefinition::LegacyTitledEnum(s) => s.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for PrimitiveSchemaDefinition {
    fn deserialize<D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<PrimitiveSchemaDefinition, D::Error> {
        use PrimitiveSchemaDefinition as P;
        use serde::de::Error;
        let value = Value::deserialize(deserializer)?;
        let has = |key: &str| value.get(key).is_some();
        let res = match value.get("type").and_then(Value::as_str) {
            Some("boolean") => BooleanSchema::deserialize(value).map(P::Boolean),
            Some("number" | "integer") => NumberSchema::deserialize(value).map(P::Number),
            Some("string") if has("oneOf") => {
                TitledSingleSelectEnumSchema::deserialize(value).map(P::TitledSingleSelectEnum)
            }
            Some("string") if has("enumNames") => {
                LegacyTitledEnumSchema::deserialize(value).map(P::LegacyTitledEnum)
            }
            Some("string") if has("enum") => {
                UntitledSingleSelectEnumSchema::deserialize(value).map(P::UntitledSingleSelectEnum)
            }
            Some("string") => StringSchema::deserialize(value).map(P::String),
            Some("array") if value.pointer("/items/anyOf").is_some() => {
                TitledMultiSelectEnumSchema::deserialize(value).map(P::TitledMultiSelectEnum)
            }
            Some("array") => {
                UntitledMultiSelectEnumSchema::deserialize(value).map(P::UntitledMultiSelectEnum)
            }
            Some(other) => return Err(D::Error::custom(format!("unknown field type {other:?}"))),
            None => return Err(D::Error::missing_field("type")),
        };
        res.map_err(D::Error::custom)
    }
}

impl From<StringSchema> for PrimitiveSchemaDefinition {
    fn from(s: StringSchema) -> PrimitiveSchemaDefinition {
        PrimitiveSchemaDefinition::String(s)
    }
}

impl From<NumberSchema> for PrimitiveSchemaDefinition {
    fn from(s: NumberSchema) -> PrimitiveSchemaDefinition {
        PrimitiveSchemaDefinition::Number(s)
    }
}

impl From<BooleanSchema> for PrimitiveSchemaDefinition {
    fn from(s: BooleanSchema) -> PrimitiveSchemaDefinition {
        PrimitiveSchemaDefinition::Boolean(s)
    }
}

impl From<UntitledSingleSelectEnumSchema> for PrimitiveSchemaDefinition {
    fn from(s: UntitledSingleSelectEnumSchema) -> PrimitiveSchemaDefinition {
        PrimitiveSchemaDefinition::UntitledSingleSelectEnum(s)
    }
}

impl From<TitledSingleSelectEnumSchema> for PrimitiveSchemaDefinition {
    fn from(s: TitledSingleSelectEnumSchema) -> PrimitiveSchemaDefinition {
        PrimitiveSchemaDefinition::TitledSingleSelectEnum(s)
    }
}

impl From<UntitledMultiSelectEnumSchema> for PrimitiveSchemaDefinition {
    fn from(s: UntitledMultiSelectEnumSchema) -> PrimitiveSchemaDefinition {
        PrimitiveSchemaDefinition::UntitledMultiSelectEnum(s)
    }
}

impl From<TitledMultiSelectEnumSchema> for PrimitiveSchemaDefinition {
    fn from(s: TitledMultiSelectEnumSchema) -> PrimitiveSchemaDefinition {
        PrimitiveSchemaDefinition::TitledMultiSelectEnum(s)
    }
}

impl From<LegacyTitledEnumSchema> for PrimitiveSchemaDefinition {
    fn from(s: LegacyTitledEnumSchema) -> PrimitiveSchemaDefinition {
        PrimitiveSchemaDefinition::LegacyTitledEnum(s)
    }
}

/// A text field (schema `StringSchema`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StringSchema {
    /// Always `"string"`.
    pub r#type: String,
    /// The label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The fewest characters allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    /// The most characters allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// One of `"email"`, `"uri"`, `"date"`, `"date-time"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// The initial value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

impl Default for StringSchema {
    /// A plain `{"type":"string"}`.
    fn default() -> StringSchema {
        StringSchema {
            r#type: "string".to_owned(),
            title: None,
            description: None,
            min_length: None,
            max_length: None,
            format: None,
            default: None,
        }
    }
}

/// A numeric field (schema `NumberSchema`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NumberSchema {
    /// `"number"` or `"integer"`.
    pub r#type: String,
    /// The label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The smallest value allowed.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "whole_as_integer"
    )]
    pub minimum: Option<f64>,
    /// The largest value allowed.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "whole_as_integer"
    )]
    pub maximum: Option<f64>,
    /// The initial value.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "whole_as_integer"
    )]
    pub default: Option<f64>,
}

/// A whole number is written as one (`30`, not `30.0`): an `integer`
/// field's bounds and default must read as integers to the peer, whose
/// answer then keeps the same form.
fn whole_as_integer<S: serde::Serializer>(value: &Option<f64>, out: S) -> Result<S::Ok, S::Error> {
    match value {
        // Within ±2^53 every whole f64 is exact as an i64.
        Some(v) if v.fract() == 0.0 && v.abs() <= 9_007_199_254_740_992.0 => {
            out.serialize_i64(*v as i64)
        }
        Some(v) => out.serialize_f64(*v),
        None => out.serialize_none(),
    }
}

impl Default for NumberSchema {
    /// A plain `{"type":"number"}`.
    fn default() -> NumberSchema {
        NumberSchema {
            r#type: "number".to_owned(),
            title: None,
            description: None,
            minimum: None,
            maximum: None,
            default: None,
        }
    }
}

/// A checkbox (schema `BooleanSchema`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BooleanSchema {
    /// Always `"boolean"`.
    pub r#type: String,
    /// The label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The initial value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<bool>,
}

impl Default for BooleanSchema {
    /// A plain `{"type":"boolean"}`.
    fn default() -> BooleanSchema {
        BooleanSchema {
            r#type: "boolean".to_owned(),
            title: None,
            description: None,
            default: None,
        }
    }
}

/// A choice of one value, labelled by the value itself (schema
/// `UntitledSingleSelectEnumSchema`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UntitledSingleSelectEnumSchema {
    /// Always `"string"`.
    pub r#type: String,
    /// The label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The values to choose from.
    pub r#enum: Vec<String>,
    /// The initial value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

impl UntitledSingleSelectEnumSchema {
    /// A choice among `values`.
    pub fn new(values: Vec<String>) -> UntitledSingleSelectEnumSchema {
        UntitledSingleSelectEnumSchema {
            r#type: "string".to_owned(),
            title: None,
            description: None,
            r#enum: values,
            default: None,
        }
    }
}

/// A choice of one value with display labels (schema
/// `TitledSingleSelectEnumSchema`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledSingleSelectEnumSchema {
    /// Always `"string"`.
    pub r#type: String,
    /// The label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The options to choose from.
    pub one_of: Vec<EnumOption>,
    /// The initial value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// A choice of several values, labelled by the values themselves (schema
/// `UntitledMultiSelectEnumSchema`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UntitledMultiSelectEnumSchema {
    /// Always `"array"`.
    pub r#type: String,
    /// The label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The fewest values to choose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// The most values to choose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The values to choose from.
    pub items: UntitledEnumItems,
    /// The initial values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
}

/// The `items` of schema `UntitledMultiSelectEnumSchema`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UntitledEnumItems {
    /// Always `"string"`.
    pub r#type: String,
    /// The values to choose from.
    pub r#enum: Vec<String>,
}

/// A choice of several values with display labels (schema
/// `TitledMultiSelectEnumSchema`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledMultiSelectEnumSchema {
    /// Always `"array"`.
    pub r#type: String,
    /// The label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The fewest values to choose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// The most values to choose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The options to choose from.
    pub items: TitledEnumItems,
    /// The initial values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
}

/// The `items` of schema `TitledMultiSelectEnumSchema`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledEnumItems {
    /// The options to choose from.
    pub any_of: Vec<EnumOption>,
}

/// A value and its label, in `oneOf` or `items.anyOf` of the titled enum
/// schemas.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EnumOption {
    /// The value.
    pub r#const: String,
    /// The label.
    pub title: String,
}

/// A choice of one value with labels in a parallel array (schema
/// `LegacyTitledEnumSchema`, deprecated in favour of
/// `TitledSingleSelectEnumSchema`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LegacyTitledEnumSchema {
    /// Always `"string"`.
    pub r#type: String,
    /// The label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The values to choose from.
    pub r#enum: Vec<String>,
    /// Labels for `enum`, in the same order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enum_names: Option<Vec<String>>,
    /// The initial value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(json: &str) -> &'static str {
        match serde_json::from_str::<PrimitiveSchemaDefinition>(json).unwrap() {
            PrimitiveSchemaDefinition::String(_) => "string",
            PrimitiveSchemaDefinition::Number(_) => "number",
            PrimitiveSchemaDefinition::Boolean(_) => "boolean",
            PrimitiveSchemaDefinition::UntitledSingleSelectEnum(_) => "untitled-single",
            PrimitiveSchemaDefinition::TitledSingleSelectEnum(_) => "titled-single",
            PrimitiveSchemaDefinition::UntitledMultiSelectEnum(_) => "untitled-multi",
            PrimitiveSchemaDefinition::TitledMultiSelectEnum(_) => "titled-multi",
            PrimitiveSchemaDefinition::LegacyTitledEnum(_) => "legacy",
        }
    }

    #[test]
    fn whole_numbers_round_trip_as_integers() {
        let json = r#"{"type":"integer","minimum":1,"maximum":9.5,"default":30}"#;
        let schema: NumberSchema = serde_json::from_str(json).unwrap();
        assert_eq!(serde_json::to_string(&schema).unwrap(), json);
    }

    #[test]
    fn dispatch_by_shape() {
        assert_eq!(kind(r#"{"type":"string","format":"email"}"#), "string");
        assert_eq!(kind(r#"{"type":"integer","minimum":1}"#), "number");
        assert_eq!(kind(r#"{"type":"boolean"}"#), "boolean");
        assert_eq!(kind(r#"{"type":"string","enum":["a"]}"#), "untitled-single");
        assert_eq!(
            kind(r#"{"type":"string","oneOf":[{"const":"a","title":"A"}]}"#),
            "titled-single"
        );
        assert_eq!(
            kind(r#"{"type":"string","enum":["a"],"enumNames":["A"]}"#),
            "legacy"
        );
        assert_eq!(
            kind(r#"{"type":"array","items":{"type":"string","enum":["a"]}}"#),
            "untitled-multi"
        );
        assert_eq!(
            kind(r#"{"type":"array","items":{"anyOf":[{"const":"a","title":"A"}]}}"#),
            "titled-multi"
        );
        assert!(serde_json::from_str::<PrimitiveSchemaDefinition>(r#"{"type":"object"}"#).is_err());
        assert!(serde_json::from_str::<PrimitiveSchemaDefinition>(r#"{"title":"x"}"#).is_err());
    }
}

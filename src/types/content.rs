//! Content blocks carried by tool results and prompt messages, and the
//! contents of a resource.
//!
//! The block structs hold no `type` field: [`ContentBlock`] is an internally
//! tagged enum that writes and reads `"type"` itself, so a block cannot carry
//! a tag that contradicts its Rust type. Serializing a `TextContent` on its
//! own therefore gives the object without `"type"`; wrap it in a
//! `ContentBlock` to get the schema's `TextContent` shape.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{Annotations, Icon, Meta};

/// A piece of content (schema `ContentBlock`), tagged by `"type"`.
///
/// The enum owns the tag: the block structs have no `type` field, so
/// serialize a block through this enum to get the schema's shape.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// `"text"` (schema `TextContent`).
    Text(TextContent),
    /// `"image"` (schema `ImageContent`).
    Image(ImageContent),
    /// `"audio"` (schema `AudioContent`).
    Audio(AudioContent),
    /// `"resource_link"` (schema `ResourceLink`).
    ResourceLink(ResourceLink),
    /// `"resource"` (schema `EmbeddedResource`).
    Resource(EmbeddedResource),
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ContentBlock, D::Error> {
        const TAGS: &[&str] = &["text", "image", "audio", "resource_link", "resource"];
        super::tagged::deserialize(deserializer, TAGS, |tag| {
            Some(match tag {
                "text" => |v| Deserialize::deserialize(v).map(ContentBlock::Text),
                "image" => |v| Deserialize::deserialize(v).map(ContentBlock::Image),
                "audio" => |v| Deserialize::deserialize(v).map(ContentBlock::Audio),
                "resource_link" => |v| Deserialize::deserialize(v).map(ContentBlock::ResourceLink),
                "resource" => |v| Deserialize::deserialize(v).map(ContentBlock::Resource),
                _ => return None,
            })
        })
    }
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> ContentBlock {
        ContentBlock::Text(TextContent::new(text))
    }

    /// An image block from base64 `data` and its MIME type.
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> ContentBlock {
        ContentBlock::Image(ImageContent::new(data, mime_type))
    }

    /// An audio block from base64 `data` and its MIME type.
    pub fn audio(data: impl Into<String>, mime_type: impl Into<String>) -> ContentBlock {
        ContentBlock::Audio(AudioContent::new(data, mime_type))
    }

    /// A link to a resource by `uri` and `name`.
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> ContentBlock {
        ContentBlock::ResourceLink(ResourceLink::new(uri, name))
    }

    /// An embedded resource.
    pub fn resource(contents: ResourceContents) -> ContentBlock {
        ContentBlock::Resource(EmbeddedResource::new(contents))
    }

    /// The text, if this is a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

impl From<TextContent> for ContentBlock {
    fn from(c: TextContent) -> ContentBlock {
        ContentBlock::Text(c)
    }
}

impl From<ImageContent> for ContentBlock {
    fn from(c: ImageContent) -> ContentBlock {
        ContentBlock::Image(c)
    }
}

impl From<AudioContent> for ContentBlock {
    fn from(c: AudioContent) -> ContentBlock {
        ContentBlock::Audio(c)
    }
}

impl From<ResourceLink> for ContentBlock {
    fn from(c: ResourceLink) -> ContentBlock {
        ContentBlock::ResourceLink(c)
    }
}

impl From<EmbeddedResource> for ContentBlock {
    fn from(c: EmbeddedResource) -> ContentBlock {
        ContentBlock::Resource(c)
    }
}

/// Text content (schema `TextContent`, without its `type` tag).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Hints for the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl TextContent {
    /// Text content with no annotations.
    pub fn new(text: impl Into<String>) -> TextContent {
        TextContent {
            text: text.into(),
            annotations: None,
            meta: None,
        }
    }
}

/// An image (schema `ImageContent`, without its `type` tag).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// Base64-encoded image data.
    pub data: String,
    /// The MIME type, such as `image/png`.
    pub mime_type: String,
    /// Hints for the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl ImageContent {
    /// An image from base64 `data` and its MIME type.
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> ImageContent {
        ImageContent {
            data: data.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
        }
    }
}

/// Audio (schema `AudioContent`, without its `type` tag).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AudioContent {
    /// Base64-encoded audio data.
    pub data: String,
    /// The MIME type, such as `audio/wav`.
    pub mime_type: String,
    /// Hints for the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl AudioContent {
    /// Audio from base64 `data` and its MIME type.
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> AudioContent {
        AudioContent {
            data: data.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
        }
    }
}

/// A link to a resource the client may read (schema `ResourceLink`, without
/// its `type` tag). Same fields as `Resource`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceLink {
    /// The URI of the resource.
    pub uri: String,
    /// The programmatic name.
    pub name: String,
    /// A human-readable name for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resource is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Hints for the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// The size in bytes before any encoding, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Icons for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl ResourceLink {
    /// A link with only `uri` and `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> ResourceLink {
        ResourceLink {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            annotations: None,
            size: None,
            icons: None,
            meta: None,
        }
    }
}

/// A resource embedded in a message (schema `EmbeddedResource`, without its
/// `type` tag).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EmbeddedResource {
    /// The contents.
    pub resource: ResourceContents,
    /// Hints for the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl EmbeddedResource {
    /// An embedded resource with no annotations.
    pub fn new(resource: ResourceContents) -> EmbeddedResource {
        EmbeddedResource {
            resource,
            annotations: None,
            meta: None,
        }
    }
}

/// The contents of a resource: text or binary (schema `ResourceContents`,
/// narrowed to `TextResourceContents | BlobResourceContents`).
///
/// The wire has no tag; which of `text` and `blob` is present decides the
/// variant. An object with neither or both is rejected.
#[derive(Debug, Clone, PartialEq)]
pub enum ResourceContents {
    /// Has `text`.
    Text(TextResourceContents),
    /// Has `blob`.
    Blob(BlobResourceContents),
}

impl ResourceContents {
    /// Text contents of `uri`.
    pub fn text(uri: impl Into<String>, text: impl Into<String>) -> ResourceContents {
        ResourceContents::Text(TextResourceContents::new(uri, text))
    }

    /// Binary contents of `uri`, `blob` being base64.
    pub fn blob(uri: impl Into<String>, blob: impl Into<String>) -> ResourceContents {
        ResourceContents::Blob(BlobResourceContents::new(uri, blob))
    }

    /// The URI of the resource.
    pub fn uri(&self) -> &str {
        match self {
            ResourceContents::Text(t) => &t.uri,
            ResourceContents::Blob(b) => &b.uri,
        }
    }

    /// The MIME type, if known.
    pub fn mime_type(&self) -> Option<&str> {
        match self {
            ResourceContents::Text(t) => t.mime_type.as_deref(),
            ResourceContents::Blob(b) => b.mime_type.as_deref(),
        }
    }
}

impl From<TextResourceContents> for ResourceContents {
    fn from(c: TextResourceContents) -> ResourceContents {
        ResourceContents::Text(c)
    }
}

impl From<BlobResourceContents> for ResourceContents {
    fn from(c: BlobResourceContents) -> ResourceContents {
        ResourceContents::Blob(c)
    }
}

impl Serialize for ResourceContents {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ResourceContents::Text(t) => t.serialize(serializer),
            ResourceContents::Blob(b) => b.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ResourceContents {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ResourceContents, D::Error> {
        // Every field optional, so one pass over the input decides the
        // variant without buffering it.
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Wire {
            uri: String,
            #[serde(default)]
            mime_type: Option<String>,
            #[serde(default)]
            text: Option<String>,
            #[serde(default)]
            blob: Option<String>,
            #[serde(rename = "_meta", default)]
            meta: Option<Meta>,
        }
        let wire = Wire::deserialize(deserializer)?;
        match (wire.text, wire.blob) {
            (Some(text), None) => Ok(ResourceContents::Text(TextResourceContents {
                uri: wire.uri,
                mime_type: wire.mime_type,
                text,
                meta: wire.meta,
            })),
            (None, Some(blob)) => Ok(ResourceContents::Blob(BlobResourceContents {
                uri: wire.uri,
                mime_type: wire.mime_type,
                blob,
                meta: wire.meta,
            })),
            (None, None) => Err(serde::de::Error::custom(
                "resource contents needs `text` or `blob`",
            )),
            (Some(_), Some(_)) => Err(serde::de::Error::custom(
                "resource contents has both `text` and `blob`",
            )),
        }
    }
}

/// Text contents of a resource (schema `TextResourceContents`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextResourceContents {
    /// The URI of the resource.
    pub uri: String,
    /// The MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The text.
    pub text: String,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl TextResourceContents {
    /// Text contents of `uri` with no MIME type.
    pub fn new(uri: impl Into<String>, text: impl Into<String>) -> TextResourceContents {
        TextResourceContents {
            uri: uri.into(),
            mime_type: None,
            text: text.into(),
            meta: None,
        }
    }
}

/// Binary contents of a resource (schema `BlobResourceContents`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlobResourceContents {
    /// The URI of the resource.
    pub uri: String,
    /// The MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Base64-encoded data.
    pub blob: String,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl BlobResourceContents {
    /// Binary contents of `uri` (base64 `blob`) with no MIME type.
    pub fn new(uri: impl Into<String>, blob: impl Into<String>) -> BlobResourceContents {
        BlobResourceContents {
            uri: uri.into(),
            mime_type: None,
            blob: blob.into(),
            meta: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_block_tags() {
        let cases = [
            (ContentBlock::text("hi"), r#"{"type":"text","text":"hi"}"#),
            (
                ContentBlock::image("AA==", "image/png"),
                r#"{"type":"image","data":"AA==","mimeType":"image/png"}"#,
            ),
            (
                ContentBlock::audio("AA==", "audio/wav"),
                r#"{"type":"audio","data":"AA==","mimeType":"audio/wav"}"#,
            ),
            (
                ContentBlock::resource_link("file:///a", "a"),
                r#"{"type":"resource_link","uri":"file:///a","name":"a"}"#,
            ),
            (
                ContentBlock::resource(ResourceContents::text("file:///a", "x")),
                r#"{"type":"resource","resource":{"uri":"file:///a","text":"x"}}"#,
            ),
        ];
        for (block, json) in cases {
            assert_eq!(serde_json::to_string(&block).unwrap(), json);
            assert_eq!(serde_json::from_str::<ContentBlock>(json).unwrap(), block);
        }
        // The tag need not come first, and unknown fields are accepted.
        let block: ContentBlock =
            serde_json::from_str(r#"{"text":"hi","extra":1,"type":"text"}"#).unwrap();
        assert_eq!(block.as_text(), Some("hi"));
        assert!(serde_json::from_str::<ContentBlock>(r#"{"type":"video"}"#).is_err());
        assert!(serde_json::from_str::<ContentBlock>(r#"{"text":"hi"}"#).is_err());
    }

    #[test]
    fn resource_contents_text_vs_blob() {
        let text: ResourceContents =
            serde_json::from_str(r#"{"uri":"file:///a","mimeType":"text/plain","text":""}"#)
                .unwrap();
        assert!(matches!(&text, ResourceContents::Text(t) if t.text.is_empty()));
        assert_eq!(text.mime_type(), Some("text/plain"));
        let blob: ResourceContents =
            serde_json::from_str(r#"{"uri":"file:///b","blob":"AA=="}"#).unwrap();
        assert!(matches!(&blob, ResourceContents::Blob(b) if b.blob == "AA=="));
        assert_eq!(
            serde_json::to_string(&blob).unwrap(),
            r#"{"uri":"file:///b","blob":"AA=="}"#
        );
        assert!(serde_json::from_str::<ResourceContents>(r#"{"uri":"x"}"#).is_err());
        assert!(
            serde_json::from_str::<ResourceContents>(r#"{"uri":"x","text":"","blob":""}"#).is_err()
        );
    }
}

//! What the command line prints on stdout for people: content blocks, the
//! items of a list (short and `--long`), capabilities; and the files
//! `--save DIR` writes. (`--json` prints what the server sent instead:
//! see `commands`.)

use std::fmt::Write as _;
use std::io::Write;

use mcp_stdio::types::{
    CallToolResult, ContentBlock, GetPromptResult, Prompt, Resource, ResourceContents,
    ResourceTemplate, Tool,
};
use serde_json::Value;

use crate::escape::line;
pub use crate::save::Saver;

/// Writes `text` to stdout, with a newline unless it ends with one.
/// `false` once stdout is closed (`| head`): the caller stops.
///
/// On a terminal the server's control characters are shown escaped
/// (`escape`), with `--json` as JSON escapes: everything printed goes
/// through here.
pub fn print(text: &str) -> bool {
    let text = crate::escape::stdout().shown(text);
    let mut out = std::io::stdout().lock();
    let newline = if text.ends_with('\n') { "" } else { "\n" };
    write!(out, "{text}{newline}")
        .and_then(|()| out.flush())
        .is_ok()
}

/// A tool's result: each content block, then the structured content as
/// JSON (unless a text block already holds that very JSON).
pub fn call_result(result: &CallToolResult, saver: &mut Saver) -> String {
    let mut out = String::new();
    for block in &result.content {
        push_line(&mut out, &content(block, saver));
    }
    if let Some(structured) = &result.structured_content {
        let repeated = result.content.iter().any(|b| {
            b.as_text()
                .and_then(|t| serde_json::from_str::<Value>(t).ok())
                .is_some_and(|v| &v == structured)
        });
        if !repeated {
            push_line(&mut out, &structured.to_string());
        }
    }
    out
}

/// One content block: text as text, binary as its type and size, a link
/// as its URI, an embedded resource as a header and its contents.
pub fn content(block: &ContentBlock, saver: &mut Saver) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(i) => {
            format!("[image {}]", saver.describe(&i.data, Some(&i.mime_type)))
        }
        ContentBlock::Audio(a) => {
            format!("[audio {}]", saver.describe(&a.data, Some(&a.mime_type)))
        }
        ContentBlock::ResourceLink(link) => format!("[link {}]", line(&link.uri)),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::Text(t) => {
                let mime = t
                    .mime_type
                    .as_deref()
                    .map_or(String::new(), |m| format!(", {m}"));
                format!("[resource {}{}]\n{}", line(&t.uri), line(&mime), t.text)
            }
            ResourceContents::Blob(b) => format!(
                "[resource {}, {}]",
                line(&b.uri),
                saver.describe(&b.blob, b.mime_type.as_deref())
            ),
        },
    }
}

/// One item of `resources/read`: text as text, a blob as its type and
/// size.
pub fn resource_contents(contents: &ResourceContents, saver: &mut Saver) -> String {
    match contents {
        ResourceContents::Text(t) => t.text.clone(),
        ResourceContents::Blob(b) => {
            format!(
                "[blob {}] {}",
                saver.describe(&b.blob, b.mime_type.as_deref()),
                line(&b.uri)
            )
        }
    }
}

/// A prompt's messages, each after its role.
pub fn prompt_result(result: &GetPromptResult, saver: &mut Saver) -> String {
    let mut out = String::new();
    if let Some(description) = &result.description {
        push_line(&mut out, &format!("# {}", summary(description)));
    }
    for message in &result.messages {
        let role = serde_json::to_value(message.role)
            .ok()
            .and_then(|r| r.as_str().map(str::to_owned))
            .unwrap_or_default();
        let text = content(&message.content, saver);
        if text.contains('\n') {
            push_line(&mut out, &format!("{role}:"));
            for line in text.lines() {
                push_line(&mut out, &format!("  {line}"));
            }
        } else {
            push_line(&mut out, &format!("{role}: {text}"));
        }
    }
    out
}

/// `name  first line of the description`, names padded to `width` (both
/// escaped: one item, one line).
pub fn item_line(name: &str, description: Option<&str>, width: usize) -> String {
    let name = line(name);
    match description.map(summary).filter(|d| !d.is_empty()) {
        Some(text) => format!("{name:width$}  {text}"),
        None => name.into_owned(),
    }
}

/// A tool in full: description, arguments, schemas, annotations.
pub fn tool_long(tool: &Tool) -> String {
    let mut out = line(&tool.name).into_owned();
    if let Some(title) = &tool.title {
        let _ = write!(out, " ({})", line(title));
    }
    out.push('\n');
    indent(&mut out, tool.description.as_deref().unwrap_or(""));
    for line in arguments(&tool.input_schema) {
        indent(&mut out, &line);
    }
    indent(&mut out, &format!("input schema: {}", tool.input_schema));
    if let Some(schema) = &tool.output_schema {
        indent(&mut out, &format!("output schema: {schema}"));
    }
    if let Some(annotations) = &tool.annotations {
        let value = serde_json::to_value(annotations).unwrap_or_default();
        indent(&mut out, &format!("annotations: {value}"));
    }
    out
}

/// A resource in full.
pub fn resource_long(resource: &Resource) -> String {
    let mut out = line(&resource.uri).into_owned();
    out.push('\n');
    indent(&mut out, &format!("name: {}", resource.name));
    if let Some(title) = &resource.title {
        indent(&mut out, &format!("title: {title}"));
    }
    if let Some(mime) = &resource.mime_type {
        indent(&mut out, &format!("type: {mime}"));
    }
    if let Some(size) = resource.size {
        indent(&mut out, &format!("size: {size} bytes"));
    }
    indent(&mut out, resource.description.as_deref().unwrap_or(""));
    out
}

/// A resource template in full.
pub fn template_long(template: &ResourceTemplate) -> String {
    let mut out = line(&template.uri_template).into_owned();
    out.push('\n');
    indent(&mut out, &format!("name: {}", template.name));
    if let Some(title) = &template.title {
        indent(&mut out, &format!("title: {title}"));
    }
    if let Some(mime) = &template.mime_type {
        indent(&mut out, &format!("type: {mime}"));
    }
    indent(&mut out, template.description.as_deref().unwrap_or(""));
    out
}

/// A prompt in full: description and arguments.
pub fn prompt_long(prompt: &Prompt) -> String {
    let mut out = line(&prompt.name).into_owned();
    if let Some(title) = &prompt.title {
        let _ = write!(out, " ({})", line(title));
    }
    out.push('\n');
    indent(&mut out, prompt.description.as_deref().unwrap_or(""));
    let args = prompt.arguments.as_deref().unwrap_or_default();
    if args.is_empty() {
        indent(&mut out, "arguments: none");
    }
    for arg in args {
        let required = if arg.required == Some(true) {
            ", required"
        } else {
            ""
        };
        let description = arg
            .description
            .as_deref()
            .map_or(String::new(), |d| format!(": {}", summary(d)));
        indent(
            &mut out,
            &format!("{} (string{required}){description}", line(&arg.name)),
        );
    }
    out
}

/// The properties of an object schema, one a line: `name (type,
/// required): description`.
pub fn arguments(schema: &Value) -> Vec<String> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    if properties.is_empty() {
        return vec!["arguments: none".to_owned()];
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut lines = vec!["arguments:".to_owned()];
    for (name, property) in properties {
        let mut kind = match property.get("type") {
            Some(Value::String(t)) => t.clone(),
            Some(Value::Array(types)) => types
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" | "),
            _ if property.get("$ref").is_some() => "object".to_owned(),
            _ => "any".to_owned(),
        };
        if let Some(values) = property.get("enum").and_then(Value::as_array) {
            let values: Vec<String> = values.iter().map(Value::to_string).collect();
            kind = format!("one of {}", values.join(", "));
        }
        if required.contains(&name.as_str()) {
            kind.push_str(", required");
        }
        if let Some(default) = property.get("default") {
            let _ = write!(kind, ", default {default}");
        }
        let description = property
            .get("description")
            .and_then(Value::as_str)
            .map_or(String::new(), |d| format!(": {}", summary(d)));
        lines.push(format!("  {} ({kind}){description}", line(name)));
    }
    lines
}

/// The capabilities, one word each, with what each declares inside:
/// `tools (listChanged), resources (subscribe, listChanged)`.
pub fn capabilities(caps: &Value) -> String {
    let Some(caps) = caps.as_object() else {
        return String::new();
    };
    let names: Vec<String> = caps
        .iter()
        .map(|(name, value)| {
            let inner: Vec<&str> = value
                .as_object()
                .map(|o| {
                    o.iter()
                        .filter(|(_, v)| !matches!(v, Value::Bool(false) | Value::Null))
                        .map(|(k, _)| k.as_str())
                        .collect()
                })
                .unwrap_or_default();
            if inner.is_empty() {
                name.clone()
            } else {
                format!("{name} ({})", inner.join(", "))
            }
        })
        .collect();
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

/// The first line of a description, shown on a line of its own: trimmed,
/// and what is left of a line break in it (a lone `\r`, U+2028) escaped.
pub fn summary(text: &str) -> std::borrow::Cow<'_, str> {
    line(first_line(text))
}

/// The first non-blank line of `text`, trimmed.
fn first_line(text: &str) -> &str {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
}

fn push_line(out: &mut String, line: &str) {
    out.push_str(line);
    if !line.ends_with('\n') {
        out.push('\n');
    }
}

fn indent(out: &mut String, text: &str) {
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let _ = writeln!(out, "    {}", line.trim_end());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_stdio::types::{ContentBlock, TextResourceContents};
    use serde_json::json;

    #[test]
    fn content_for_people() {
        let mut saver = Saver::new(None, "t").unwrap();
        assert_eq!(content(&ContentBlock::text("hi"), &mut saver), "hi");
        assert_eq!(
            content(&ContentBlock::image("aGk=", "image/png"), &mut saver),
            "[image image/png, 2 bytes]"
        );
        assert_eq!(
            content(&ContentBlock::resource_link("test://x", "x"), &mut saver),
            "[link test://x]"
        );
        let mut embedded = TextResourceContents::new("test://e", "body");
        embedded.mime_type = Some("text/plain".into());
        assert_eq!(
            content(&ContentBlock::resource(embedded.into()), &mut saver),
            "[resource test://e, text/plain]\nbody"
        );
    }

    #[test]
    fn structured_content_is_not_repeated() {
        let mut saver = Saver::new(None, "t").unwrap();
        let both = CallToolResult::text("3").with_structured(json!({ "sum": 3 }));
        assert_eq!(call_result(&both, &mut saver), "3\n{\"sum\":3}\n");
        let same = CallToolResult::text("{\"sum\": 3}").with_structured(json!({ "sum": 3 }));
        assert_eq!(call_result(&same, &mut saver), "{\"sum\": 3}\n");
    }

    #[test]
    fn schema_arguments() {
        let schema = json!({
            "type": "object",
            "properties": {
                "text": { "type": "string", "description": "What to say.\nMore." },
                "n": { "type": "integer", "default": 3 },
                "mode": { "type": "string", "enum": ["a", "b"] }
            },
            "required": ["text"]
        });
        assert_eq!(
            arguments(&schema),
            [
                "arguments:",
                "  mode (one of \"a\", \"b\")",
                "  n (integer, default 3)",
                "  text (string, required): What to say.",
            ]
        );
        assert_eq!(
            arguments(&json!({ "type": "object", "properties": {} })),
            ["arguments: none"]
        );
    }

    #[test]
    fn capabilities_in_a_line() {
        let caps = json!({ "tools": { "listChanged": true }, "completions": {}, "resources": { "subscribe": true, "listChanged": false } });
        assert_eq!(
            capabilities(&caps),
            "completions, resources (subscribe), tools (listChanged)"
        );
    }
}

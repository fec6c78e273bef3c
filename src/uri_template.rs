//! Matching URIs against resource templates (RFC 6570, the two forms MCP
//! servers use in practice).
//!
//! `{name}` matches one or more characters other than `/`, `?` and `#`,
//! and its value is percent-decoded; `{+name}` (reserved expansion) matches
//! any non-empty run of characters, slashes included. Everything else in
//! the template must match literally. Other RFC 6570 operators are taken
//! as literal text, so such templates match only URIs that spell them out.

use std::collections::BTreeMap;

/// A parsed URI template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Var { name: String, reserved: bool },
}

impl UriTemplate {
    /// Parses a template such as `test://template/{id}/data`.
    pub fn parse(template: &str) -> UriTemplate {
        let mut parts = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            let Some(len) = rest[open..].find('}') else {
                break;
            };
            let inner = &rest[open + 1..open + len];
            let (name, reserved) = match inner.strip_prefix('+') {
                Some(name) => (name, true),
                None => (inner, false),
            };
            let simple = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
            if !simple {
                // An operator this module does not expand: keep it literal.
                push_literal(&mut parts, &rest[..open + len + 1]);
                rest = &rest[open + len + 1..];
                continue;
            }
            push_literal(&mut parts, &rest[..open]);
            parts.push(Part::Var {
                name: name.to_owned(),
                reserved,
            });
            rest = &rest[open + len + 1..];
        }
        push_literal(&mut parts, rest);
        UriTemplate { parts }
    }

    /// The variables of `uri` if it matches the template.
    pub fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let mut vars = BTreeMap::new();
        match_parts(&self.parts, uri, &mut vars).then_some(vars)
    }
}

fn push_literal(parts: &mut Vec<Part>, text: &str) {
    if text.is_empty() {
        return;
    }
    if let Some(Part::Literal(last)) = parts.last_mut() {
        last.push_str(text);
    } else {
        parts.push(Part::Literal(text.to_owned()));
    }
}

fn match_parts(parts: &[Part], uri: &str, vars: &mut BTreeMap<String, String>) -> bool {
    let Some((first, rest)) = parts.split_first() else {
        return uri.is_empty();
    };
    match first {
        Part::Literal(lit) => uri
            .strip_prefix(lit.as_str())
            .is_some_and(|tail| match_parts(rest, tail, vars)),
        Part::Var { name, reserved } => {
            // Try every possible length of the value, shortest first, so a
            // literal after the variable can anchor it.
            let limit = if *reserved {
                uri.len()
            } else {
                uri.find(['/', '?', '#']).unwrap_or(uri.len())
            };
            for (end, _) in uri[..limit].char_indices().skip(1).chain([(limit, ' ')]) {
                if end == 0 {
                    continue;
                }
                if match_parts(rest, &uri[end..], vars) {
                    let value = &uri[..end];
                    let value = if *reserved {
                        value.to_owned()
                    } else {
                        percent_decode(value)
                    };
                    vars.insert(name.clone(), value);
                    return true;
                }
            }
            false
        }
    }
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(hi), Some(lo)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push(hi * 16 + lo);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

fn hex(byte: u8) -> Option<u8> {
    (byte as char).to_digit(16).map(|d| d as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(template: &str, uri: &str) -> Option<Vec<(String, String)>> {
        UriTemplate::parse(template)
            .matches(uri)
            .map(|m| m.into_iter().collect())
    }

    #[test]
    fn simple_and_reserved_variables() {
        assert_eq!(
            vars("test://template/{id}/data", "test://template/123/data"),
            Some(vec![("id".into(), "123".into())])
        );
        assert_eq!(
            vars("test://template/{id}/data", "test://template/1/2/data"),
            None
        );
        assert_eq!(
            vars("test://template/{id}/data", "test://template//data"),
            None
        );
        assert_eq!(
            vars("file:///{+path}", "file:///a/b/c.txt"),
            Some(vec![("path".into(), "a/b/c.txt".into())])
        );
        assert_eq!(
            vars("x://{a}-{b}", "x://one-two"),
            Some(vec![("a".into(), "one".into()), ("b".into(), "two".into())])
        );
        assert_eq!(
            vars("x://{name}", "x://hello%20world"),
            Some(vec![("name".into(), "hello world".into())])
        );
        assert_eq!(vars("x://fixed", "x://fixed"), Some(vec![]));
        assert_eq!(vars("x://{?q}", "x://{?q}"), Some(vec![]));
    }
}

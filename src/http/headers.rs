//! [`HttpHeaders`]: the header fields of one request, looked up by name
//! without regard to case (RFC 9110 section 5.1).

/// The header fields of an HTTP request, in the order they arrived.
///
/// Names are compared without regard to case; values are kept as sent
/// (without the whitespace around them). The server's authorization hook
/// (`HttpOptions::authorize`) reads them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpHeaders {
    fields: Vec<(String, String)>,
}

impl HttpHeaders {
    /// Headers from `(name, value)` pairs, for tests and hooks.
    pub fn from_pairs<N: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (N, V)>,
    ) -> HttpHeaders {
        HttpHeaders {
            fields: pairs
                .into_iter()
                .map(|(n, v)| (n.into(), v.into()))
                .collect(),
        }
    }

    /// The value of the first field named `name` (any case).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The values of every field named `name` (any case), in order.
    pub fn get_all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.fields
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Every field, `(name, value)`, in the order they arrived.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.fields.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// How many fields named `name` (any case) there are.
    pub(crate) fn count(&self, name: &str) -> usize {
        self.get_all(name).count()
    }

    /// Whether a list-valued field (`Accept`, `Connection`, ...) names
    /// `token` among its comma-separated elements, parameters ignored.
    pub(crate) fn lists(&self, name: &str, token: &str) -> bool {
        self.get_all(name)
            .flat_map(|v| v.split(','))
            .map(|element| element.split(';').next().unwrap_or("").trim())
            .any(|element| element.eq_ignore_ascii_case(token))
    }

    pub(crate) fn push(&mut self, name: String, value: String) {
        self.fields.push((name, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_in_any_case_and_lists_split_on_commas() {
        let headers = HttpHeaders::from_pairs([
            ("Accept", "application/json;q=0.9, TEXT/event-stream"),
            ("mcp-method", "tools/call"),
            ("X-Twice", "a"),
            ("x-twice", "b"),
        ]);
        assert_eq!(headers.get("MCP-METHOD"), Some("tools/call"));
        assert_eq!(headers.get("absent"), None);
        assert_eq!(headers.get_all("x-TWICE").collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(headers.count("x-twice"), 2);
        assert!(headers.lists("accept", "application/json"));
        assert!(headers.lists("accept", "text/event-stream"));
        assert!(!headers.lists("accept", "text/html"));
    }
}

//! The server's URL: `http://host[:port][/path]`. No TLS: an `https` URL
//! is refused with a message that says so.

use crate::error::Error;

/// Where the MCP endpoint is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Endpoint {
    /// `host:port`, for connecting and for the `Host` header.
    pub authority: String,
    /// The request target: path and query, `/` at least.
    pub target: String,
}

impl Endpoint {
    /// Parses `url`.
    pub fn parse(url: &str) -> Result<Endpoint, Error> {
        let bad = |why: &str| Error::Protocol(format!("the URL '{url}' {why}"));
        if url.starts_with("https://") {
            return Err(bad(
                "needs TLS, which mcp-stdio's HTTP client does not speak: use http:// (a local server, or a TLS-terminating proxy)",
            ));
        }
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| bad("does not start with http://"))?;
        let (authority, target) = match rest.find(['/', '?']) {
            Some(at) if rest.as_bytes()[at] == b'?' => (&rest[..at], format!("/{}", &rest[at..])),
            Some(at) => (&rest[..at], rest[at..].to_owned()),
            None => (rest, "/".to_owned()),
        };
        let authority = authority.rsplit('@').next().unwrap_or(authority);
        if authority.is_empty() {
            return Err(bad("has no host"));
        }
        let has_port = match authority.rfind(':') {
            Some(at) => !authority[at..].contains(']'),
            None => false,
        };
        let authority = if has_port {
            authority.to_owned()
        } else {
            format!("{authority}:80")
        };
        Ok(Endpoint { authority, target })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_authority_and_target() {
        let e = Endpoint::parse("http://127.0.0.1:8080/mcp").unwrap();
        assert_eq!(
            (e.authority.as_str(), e.target.as_str()),
            ("127.0.0.1:8080", "/mcp")
        );
        let e = Endpoint::parse("http://localhost").unwrap();
        assert_eq!(
            (e.authority.as_str(), e.target.as_str()),
            ("localhost:80", "/")
        );
        let e = Endpoint::parse("http://[::1]/mcp?x=1").unwrap();
        assert_eq!(
            (e.authority.as_str(), e.target.as_str()),
            ("[::1]:80", "/mcp?x=1")
        );
        let e = Endpoint::parse("http://h:1?x").unwrap();
        assert_eq!(e.target, "/?x");
        let tls = Endpoint::parse("https://example.com/mcp").unwrap_err();
        assert!(tls.to_string().contains("TLS"), "{tls}");
        assert!(Endpoint::parse("ftp://x").is_err());
    }
}

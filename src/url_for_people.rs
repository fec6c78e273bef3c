//! A URL as people read it in errors, hints and notes: one function, the
//! library's (the HTTP client, OAuth) and the command line's (which
//! includes this file), so that no message anywhere repeats a URL's
//! secrets.

/// A URL split as RFC 3986 section 3 splits it, the one reading every
/// part of the crate and the command line takes (`Endpoint::parse`, which
/// connects; OAuth's `Url::parse`; `url_for_people`; the command line's
/// token file): the scheme before `://`; the authority after it, up to the
/// first `/`, `?` or `#` (section 3.2: "terminated by the next slash
/// ("/"), question mark ("?"), or number sign ("#") character, or by the
/// end of the URI"); in it, the user information up to its last `@`, and
/// a port after the last `:` outside an IPv6 literal's brackets; then the
/// path, the query after the first `?` and the fragment after the first
/// `#`. Nothing is checked here: a port may be no number (the caller
/// judges); a text without a scheme (letters, digits, `+`, `-`, `.`)
/// and `://` is read as starting with its authority.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UrlParts<'a> {
    /// Before `://`, as written.
    pub scheme: Option<&'a str>,
    /// Before the authority's last `@`.
    pub userinfo: Option<&'a str>,
    /// The host as written: an IPv6 literal with its brackets.
    pub host: &'a str,
    /// After the host's `:`, as written (perhaps empty, perhaps no number).
    pub port: Option<&'a str>,
    /// From the end of the authority to the first `?` or `#`.
    pub path: &'a str,
    /// After the first `?`, up to the first `#`.
    pub query: Option<&'a str>,
    /// After the first `#`.
    pub fragment: Option<&'a str>,
}

impl UrlParts<'_> {
    /// The host, and `:port` if one is written: the authority without its
    /// user information. An empty port (`host:`) is none: RFC 3986
    /// section 3.2.3, "URI producers and normalizers should omit the port
    /// component and its ':' delimiter if port is empty", the scheme's
    /// default.
    pub fn host_port(&self) -> String {
        match self.port.filter(|port| !port.is_empty()) {
            Some(port) => format!("{}:{port}", self.host),
            None => self.host.to_owned(),
        }
    }

    /// Whether the port is written as a number, or not at all (absent or
    /// empty: the scheme's default): a port that is not one is no port,
    /// and is never shown (it may be the password of a `user:password`
    /// cut by a `#`, `?` or `/` in it).
    pub fn port_is_a_number(&self) -> bool {
        self.port
            .is_none_or(|port| port.bytes().all(|b| b.is_ascii_digit()))
    }
}

/// `url` split into its parts (see [`UrlParts`]).
pub(crate) fn split_url(url: &str) -> UrlParts<'_> {
    let is_scheme = |s: &str| {
        s.starts_with(|c: char| c.is_ascii_alphabetic())
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    };
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) if is_scheme(scheme) => (Some(scheme), rest),
        _ => (None, url),
    };
    let (rest, fragment) = match rest.split_once('#') {
        Some((rest, fragment)) => (rest, Some(fragment)),
        None => (rest, None),
    };
    let (rest, query) = match rest.split_once('?') {
        Some((rest, query)) => (rest, Some(query)),
        None => (rest, None),
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let (userinfo, host_port) = match authority.rsplit_once('@') {
        Some((userinfo, host_port)) => (Some(userinfo), host_port),
        None => (None, authority),
    };
    let port_at = host_port
        .rfind(':')
        .filter(|&at| !host_port[at..].contains(']'));
    let (host, port) = match port_at {
        Some(at) => (&host_port[..at], Some(&host_port[at + 1..])),
        None => (host_port, None),
    };
    UrlParts {
        scheme,
        userinfo,
        host,
        port,
        path,
        query,
        fragment,
    }
}

/// `url` for people: its scheme, host, port and path, never its user
/// information (`user:password@`), its query nor its fragment, where
/// secrets are (a password, a server's key, a token), nor a port that is
/// no number (what is left of a password with a `#`, `?` or `/` in it).
/// Any text is taken: it is split as [`split_url`] splits it.
pub(crate) fn url_for_people(url: &str) -> String {
    let parts = split_url(url);
    // As typed, an empty port's `:` too (`http:/x` read without its
    // scheme is the host `http` and an empty port).
    let host = match parts.port {
        Some("") => format!("{}:", parts.host),
        _ if parts.port_is_a_number() => parts.host_port(),
        _ => parts.host.to_owned(),
    };
    match parts.scheme {
        Some(scheme) => format!("{scheme}://{host}{}", parts.path),
        None => format!("{host}{}", parts.path),
    }
}

#[cfg(test)]
mod tests {
    use super::url_for_people;

    /// Claim (review-46c2): `url_for_people` cuts the query and fragment
    /// first, then takes the user information up to an `@` in what is
    /// left, so a password with a `?` or `#` in it is shown up to that
    /// character, with the user's name; the client's connect path
    /// (`Endpoint::parse`: authority up to the first `/` or `?`, user
    /// information up to its last `@`) reaches the host after the `@`.
    /// Every message with the URL (the command line's server name, an
    /// OAuth `Url::parse` error) then repeats it. Seen on main:
    /// `http://me:pw-SECRET#1@h.example/mcp` was shown
    /// `http://me:pw-SECRET`, `http://me:pw-SECRET?1@h/mcp` `http://me:pw-SECRET`.
    #[test]
    fn a_password_with_a_hash_or_a_question_mark_is_never_shown() {
        for url in [
            "http://me:pw-SECRET#1@h.example/mcp",
            "http://me:pw-SECRET?1@h.example/mcp",
        ] {
            let shown = url_for_people(url);
            assert!(!shown.contains("SECRET"), "{url} shown as {shown}");
        }
    }

    #[test]
    fn a_url_for_people_has_no_user_query_nor_fragment() {
        for (url, shown) in [
            ("https://h.example/mcp", "https://h.example/mcp"),
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
            (
                "https://me:pw@h.example:8443/a/b?key=k#f",
                "https://h.example:8443/a/b",
            ),
            ("http://a@b@h/x@y", "http://h/x@y"),
            ("http://h?key=k", "http://h"),
            ("http://[::1]:9/#x", "http://[::1]:9/"),
            ("me:pw@h.example/mcp?key=k", "h.example/mcp"),
            ("ftp://u@h/x", "ftp://h/x"),
            ("h.example/x?u=http://k@y", "h.example/x"),
            ("", ""),
        ] {
            assert_eq!(url_for_people(url), shown, "{url}");
        }
    }

    /// Claim (review-46z): a text with a scheme but one `/` (`http:/x`, a
    /// slash short) is shown without its colon, as if the scheme were a
    /// host whose port is no number (src/url_for_people.rs `split_url`:
    /// no `://`, so no scheme; `http` is read as the host and `""` as its
    /// port, which `url_for_people` drops). The error a person reads then
    /// names a URL they did not type. Seen on main: "the URL 'http/x' does
    /// not start with http:// or https://". Cosmetic. Suggested: a text
    /// whose authority has an empty port shows its colon, or `split_url`
    /// reads a `scheme:` without `//` as a scheme.
    #[test]
    fn a_url_a_slash_short_is_shown_as_typed() {
        assert_eq!(url_for_people("http:/x"), "http:/x");
        assert_eq!(
            url_for_people("https:/h.example/mcp"),
            "https:/h.example/mcp"
        );
    }
}

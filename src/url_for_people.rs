//! A URL as people read it in errors, hints and notes: one function, the
//! library's (the HTTP client, OAuth) and the command line's (which
//! includes this file), so that no message anywhere repeats a URL's
//! secrets.

/// `url` for people: its scheme, host, port and path, never its user
/// information (`user:password@`), its query nor its fragment, where
/// secrets are (a password, a server's key, a token). Any text is taken:
/// one that is not a URL loses the same parts (the user information being
/// what comes before an `@` up to the first `/`).
pub(crate) fn url_for_people(url: &str) -> String {
    let url = url.split(['?', '#']).next().unwrap_or_default();
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (Some(scheme), rest),
        None => (None, url),
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    match scheme {
        Some(scheme) => format!("{scheme}://{host}{path}"),
        None => format!("{host}{path}"),
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
    #[ignore = "review-46c2: not fixed yet"]
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
            ("", ""),
        ] {
            assert_eq!(url_for_people(url), shown, "{url}");
        }
    }
}

//! The web pieces authorization needs and nothing more: absolute URLs
//! (`Url`), percent-encoding and form bodies, and one request and its
//! whole answer (`fetch`) on the crate's own HTTP/1.1 framing. No redirect
//! is ever followed: an authorization server's or a metadata document's
//! `3xx` is an answer like any other, so nothing is sent to a host the
//! client did not choose.

use std::io::{BufReader, Read};
use std::time::{Duration, Instant};

use crate::client::http::exchange::{self, Body};
use crate::client::http::host::{self, is_local_ip};
use crate::client::http::stream::Connector;
#[cfg(feature = "https")]
use crate::client::http::tls::{self, ExtraCa};
use crate::client::http::url::Endpoint;
#[cfg(feature = "https")]
use crate::sync::lock;
use crate::url_for_people::{split_url, url_for_people};
#[cfg(feature = "https")]
use std::sync::{Arc, Mutex};

/// How long connecting, and each silence of an answer, may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The most of an answer's body read: metadata and token documents are
/// small.
const MAX_BODY: u64 = 1024 * 1024;

/// An absolute `http` or `https` URL, split where authorization needs it.
/// It shows ([`Display`](std::fmt::Display)) without its query, for
/// messages; a request goes to [`Url::as_sent`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Url {
    /// `http` or `https`, lowercase.
    pub scheme: String,
    /// The host and port as written (`example.com`, `127.0.0.1:8080`).
    pub authority: String,
    /// The path, `""` when there is none (never `"/"` alone: a URL that
    /// ends its authority with `/` has the empty path, as RFC 8414 and
    /// RFC 9728 build well-known URLs).
    pub path: String,
    /// The query without its `?`, if any.
    pub query: Option<String>,
}

impl Url {
    /// Parses `text`, split as every part of the crate splits a URL
    /// ([`split_url`]: the authority ends at the first `/`, `?` or `#`,
    /// its user information at its last `@`); a fragment is refused
    /// (RFC 8707: a resource has none; an endpoint never needs one), and
    /// user information (the client never sends it), and a port that is
    /// no number. The error shows `text` as [`url_for_people`] does.
    pub fn parse(text: &str) -> Result<Url, String> {
        let bad = |why: &str| format!("'{}' is not a usable URL: {why}", url_for_people(text));
        let parts = split_url(text);
        let scheme = parts.scheme.ok_or_else(|| bad("no scheme"))?;
        let scheme = scheme.to_ascii_lowercase();
        if scheme != "http" && scheme != "https" {
            return Err(bad("not http or https"));
        }
        if parts.fragment.is_some() {
            return Err(bad("it has a fragment"));
        }
        if parts.userinfo.is_some() {
            return Err(bad("it has user information (user:password@): remove it"));
        }
        if parts.host.is_empty() {
            return Err(bad("no host"));
        }
        if !parts.port_is_a_number() {
            return Err(bad("its port is not a number"));
        }
        let path = if parts.path == "/" { "" } else { parts.path };
        Ok(Url {
            scheme,
            authority: parts.host_port(),
            path: path.to_owned(),
            query: parts.query.map(str::to_owned),
        })
    }

    /// `scheme://authority`.
    pub fn origin(&self) -> String {
        format!("{}://{}", self.scheme, self.authority)
    }

    /// The host and port, the port the scheme's default when none is
    /// written, lowercase: for comparing two URLs' servers.
    pub fn host_port(&self) -> String {
        let default = if self.scheme == "https" { 443 } else { 80 };
        let authority = self.authority.to_ascii_lowercase();
        let has_port = authority
            .rfind(':')
            .is_some_and(|at| !authority[at..].contains(']'));
        if has_port {
            authority
        } else {
            format!("{authority}:{default}")
        }
    }

    /// Whether the host is this machine: spelled so, however it is
    /// spelled (`host::is_local`: `localhost` names, loopback and
    /// unspecified addresses in every form the connect path reads, `127.1`
    /// and `[::ffff:127.0.0.1]` too), or a name every address of which is
    /// local (`host::is_local_ip`).
    pub fn is_loopback(&self) -> bool {
        let addresses = self.addresses();
        self.spelled_local() || (!addresses.is_empty() && addresses.into_iter().all(is_local_ip))
    }

    /// Whether the host may be this machine: spelled so, or a name one of
    /// whose addresses is local (a name in `/etc/hosts`, the machine's
    /// own, `localtest.me`). The connection itself judges again, on the
    /// addresses it connects to ([`Trust::for_server`]).
    pub fn may_be_loopback(&self) -> bool {
        self.spelled_local() || self.addresses().into_iter().any(is_local_ip)
    }

    /// Whether the host is spelled as this machine (`host::is_local`).
    pub fn spelled_local(&self) -> bool {
        let host_port = self.host_port();
        let host = host_port.rsplit_once(':').map_or(&*host_port, |(h, _)| h);
        host::is_local(host)
    }

    /// The addresses the host resolves to now; none if it resolves to
    /// none.
    fn addresses(&self) -> Vec<std::net::IpAddr> {
        let host_port = self.host_port();
        let Some((host, port)) = host_port.rsplit_once(':') else {
            return Vec::new();
        };
        let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']'));
        let port = port.parse::<u16>().unwrap_or(0);
        host::addresses(bare.unwrap_or(host), port)
            .map(|addrs| addrs.into_iter().map(|a| a.ip()).collect())
            .unwrap_or_default()
    }

    /// The URL with `pairs` added to its query, percent-encoded.
    pub fn with_query(&self, pairs: &[(&str, &str)]) -> String {
        let mut query = self.query.clone().unwrap_or_default();
        let added = form(pairs);
        if !query.is_empty() && !added.is_empty() {
            query.push('&');
        }
        query.push_str(&added);
        let mut url = format!("{}{}", self.origin(), self.path);
        if !query.is_empty() {
            url.push('?');
            url.push_str(&query);
        }
        url
    }

    /// The value of the query parameter `name`, decoded; the first if it
    /// is there twice.
    pub fn query_param(&self, name: &str) -> Option<String> {
        let query = self.query.as_deref()?;
        query.split('&').find_map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(key) == name).then(|| decode(value))
        })
    }

    /// How many times the query names `name`.
    pub fn query_count(&self, name: &str) -> usize {
        let query = self.query.as_deref().unwrap_or("");
        query
            .split('&')
            .filter(|pair| decode(pair.split_once('=').map_or(*pair, |(k, _)| k)) == name)
            .count()
    }

    /// The whole URL, its query included: what a request is sent to,
    /// never shown (its query may hold a secret).
    pub fn as_sent(&self) -> String {
        match &self.query {
            Some(query) => format!("{}{}?{query}", self.origin(), self.path),
            None => format!("{}{}", self.origin(), self.path),
        }
    }
}

/// The URL for people, in every error and note: [`url_for_people`]
/// (scheme, host, port and path; the query, where a server's key often
/// is, never).
impl std::fmt::Display for Url {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&url_for_people(&self.as_sent()))
    }
}

/// `text` percent-encoded: everything but RFC 3986's unreserved
/// characters.
pub(crate) fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// `text` percent-decoded, `+` read as a space (a form's encoding); a bad
/// escape is kept as it is.
pub(crate) fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = || std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok();
        match bytes[i] {
            b'%' if hex().and_then(|h| u8::from_str_radix(h, 16).ok()).is_some() => {
                out.push(
                    hex()
                        .and_then(|h| u8::from_str_radix(h, 16).ok())
                        .unwrap_or(b'%'),
                );
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            byte => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `pairs` as an `application/x-www-form-urlencoded` body (or query).
pub(crate) fn form(pairs: &[(&str, &str)]) -> String {
    let encoded: Vec<String> = pairs
        .iter()
        .map(|(key, value)| format!("{}={}", encode(key), encode(value)))
        .collect();
    encoded.join("&")
}

/// What an authorization's `https://` requests trust (feature `https`):
/// the system's roots and the CAs the application added to the client
/// (`ClientBuilder::add_ca_pem`, `add_ca_file`, `mcp-stdio --cacert`), as
/// its MCP server's connections do, so that an authorization server whose
/// certificate a private CA signed is reached as the MCP server is. The
/// TLS settings are made at the first `https://` request (a client of a
/// plain `http://` server on loopback may need none), then shared.
#[derive(Default)]
pub(crate) struct Trust {
    /// The MCP server is not on this machine: no request goes to a host
    /// that resolves there ([`Trust::for_server`]).
    refuse_local: bool,
    #[cfg(feature = "https")]
    cas: Vec<ExtraCa>,
    #[cfg(feature = "https")]
    config: Mutex<Option<Arc<rustls::ClientConfig>>>,
}

impl Trust {
    /// Trusts `cas` besides the system's roots.
    #[cfg(feature = "https")]
    pub fn new(cas: Vec<ExtraCa>) -> Trust {
        Trust {
            refuse_local: false,
            cas,
            config: Mutex::default(),
        }
    }

    /// The trust for the MCP server at `server`: when it is not on this
    /// machine (`Url::is_loopback`), every connection refuses a host that
    /// resolves there, judged on the very addresses it connects to
    /// (`Connector::refusing_this_machine`), so that a remote server's
    /// metadata cannot send the client to this machine's own services,
    /// not even by a name that resolves elsewhere when `require_secure`
    /// looks and here when the request goes (DNS rebinding).
    pub fn for_server(mut self, server: &str) -> Trust {
        self.refuse_local = !Url::parse(server).is_ok_and(|server| server.is_loopback());
        self
    }

    /// What opens a connection to `endpoint`: TLS with these roots for
    /// `https://` (which `Endpoint::parse` refuses without the feature).
    fn connector(&self, endpoint: &Endpoint) -> Result<Connector, String> {
        #[cfg(feature = "https")]
        if endpoint.tls {
            let mut made = lock(&self.config);
            let config = match &*made {
                Some(config) => Arc::clone(config),
                None => {
                    let config = tls::config(&self.cas).map_err(|e| e.to_string())?;
                    *made = Some(Arc::clone(&config));
                    config
                }
            };
            return Ok(Connector::tls(config).refusing_this_machine(self.refuse_local));
        }
        let _ = endpoint;
        // Plain http:// only to loopback (`discover::require_secure`): to
        // this machine's addresses only, whatever the name resolves to now.
        Ok(Connector::plain()
            .refusing_this_machine(self.refuse_local)
            .only_this_machine())
    }
}

/// An answer, read whole.
#[derive(Debug)]
pub(crate) struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
}

/// Sends `verb` to `url` with `headers` and `body`, and reads the answer
/// whole (at most 1 MiB), an `https://` server verified as `trust` says.
/// No redirect is followed. `Err` says, in one line, why there is no
/// answer; it never repeats a header's value.
pub(crate) fn fetch(
    trust: &Trust,
    verb: &str,
    url: &Url,
    headers: &[(String, String)],
    body: &[u8],
) -> Result<Answer, String> {
    let endpoint = Endpoint::parse(&url.as_sent()).map_err(|e| e.to_string())?;
    let failed = |e: std::io::Error| format!("the request to {url} failed: {e}");
    let connector = trust.connector(&endpoint)?;
    let stream = connector.connect(&endpoint, TIMEOUT).map_err(failed)?;
    stream
        .socket()
        .set_read_timeout(Some(TIMEOUT))
        .map_err(failed)?;
    stream
        .socket()
        .set_write_timeout(Some(TIMEOUT))
        .map_err(failed)?;
    let mut headers = headers.to_vec();
    headers.push(("Connection".to_owned(), "close".to_owned()));
    let mut conn = BufReader::new(stream);
    exchange::write_request(conn.get_mut(), verb, &endpoint, &headers, body).map_err(failed)?;
    let head = exchange::read_head(&mut conn, verb == "HEAD", Some(Instant::now() + TIMEOUT))
        .map_err(failed)?
        .ok_or_else(|| format!("{url} closed the connection without an answer"))?;
    let mut read = Body::new(&mut conn, &head);
    read.until(Instant::now() + TIMEOUT);
    let mut bytes = Vec::new();
    read.take(MAX_BODY + 1)
        .read_to_end(&mut bytes)
        .map_err(failed)?;
    if bytes.len() as u64 > MAX_BODY {
        return Err(format!("the answer from {url} is larger than 1 MiB"));
    }
    Ok(Answer {
        status: head.status,
        body: bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_and_rebuild() {
        let url = Url::parse("http://127.0.0.1:8080/tenant1?x=1").unwrap();
        assert_eq!(url.origin(), "http://127.0.0.1:8080");
        assert_eq!(url.path, "/tenant1");
        assert_eq!(url.query.as_deref(), Some("x=1"));
        assert_eq!(url.as_sent(), "http://127.0.0.1:8080/tenant1?x=1");
        assert_eq!(url.to_string(), "http://127.0.0.1:8080/tenant1");
        assert_eq!(Url::parse("https://a.example/").unwrap().path, "");
        assert_eq!(
            Url::parse("HTTPS://A.example").unwrap().host_port(),
            "a.example:443"
        );
        assert!(Url::parse("http://a.example/#f").is_err());
        assert!(Url::parse("ftp://a.example/").is_err());
        assert!(Url::parse("http://user@a.example/").is_err());
        assert!(Url::parse("http://localhost:1/").unwrap().is_loopback());
        assert!(Url::parse("http://127.0.0.2/").unwrap().is_loopback());
        assert!(Url::parse("http://[::1]:9/").unwrap().is_loopback());
        assert!(!Url::parse("http://example.com/").unwrap().is_loopback());
    }

    #[test]
    fn queries_are_encoded_and_decoded() {
        let url = Url::parse("http://h/authorize?a=b").unwrap();
        let built = url.with_query(&[("scope", "mcp:read mcp:write"), ("r", "http://x/y")]);
        assert_eq!(
            built,
            "http://h/authorize?a=b&scope=mcp%3Aread%20mcp%3Awrite&r=http%3A%2F%2Fx%2Fy"
        );
        let back = Url::parse(&built).unwrap();
        assert_eq!(
            back.query_param("scope").as_deref(),
            Some("mcp:read mcp:write")
        );
        assert_eq!(back.query_param("a").as_deref(), Some("b"));
        assert_eq!(back.query_param("zz"), None);
        assert_eq!(decode("a+b%2"), "a b%2");
    }

    /// A server at `answer`'s mercy: accepts one connection, reads its
    /// request's head, then writes what `answer` writes until it fails.
    fn serving(answer: fn(&mut std::net::TcpStream)) -> (Url, std::thread::JoinHandle<()>) {
        use std::io::BufRead;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = Url::parse(&format!("http://{}/x", listener.local_addr().unwrap())).unwrap();
        let thread = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let mut reader = std::io::BufReader::new(conn.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            answer(&mut conn);
        });
        (url, thread)
    }

    /// Claims (review-oauth14): a metadata or token answer that never
    /// ends, fast or trickling, or whose head never ends, holds the
    /// authorization for ever or fills the memory. False: `fetch` reads at
    /// most 1 MiB of a body and 64 KiB of a head, each within its
    /// deadline (`TIMEOUT` for the head, again for the body).
    #[test]
    fn an_answer_that_never_ends_is_given_up() {
        use std::io::Write;
        let trust = Trust::default();
        let endless_body = |conn: &mut std::net::TcpStream| {
            let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n");
            let chunk = [b' '; 64 * 1024];
            while conn.write_all(&chunk).is_ok() {}
        };
        let endless_head = |conn: &mut std::net::TcpStream| {
            let _ = conn.write_all(b"HTTP/1.1 200 OK\r\n");
            while conn
                .write_all(b"X-Filler: aaaaaaaaaaaaaaaaaaaaaaaa\r\n")
                .is_ok()
            {}
        };
        for (answer, said) in [
            (
                endless_body as fn(&mut std::net::TcpStream),
                "larger than 1 MiB",
            ),
            (endless_head, "failed"),
        ] {
            let (url, thread) = serving(answer);
            let err = fetch(&trust, "GET", &url, &[], b"").unwrap_err();
            assert!(err.contains(said), "{err}");
            thread.join().unwrap();
        }
        // A body a byte every 100 ms, never ending: given up at the
        // body's deadline.
        let (url, thread) = serving(|conn| {
            let _ = conn.write_all(b"HTTP/1.1 200 OK\r\n\r\n");
            while conn.write_all(b" ").is_ok() {
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let started = Instant::now();
        let err = fetch(&trust, "GET", &url, &[], b"").unwrap_err();
        assert!(
            started.elapsed() < TIMEOUT + Duration::from_secs(5),
            "{err}"
        );
        thread.join().unwrap();
    }
}

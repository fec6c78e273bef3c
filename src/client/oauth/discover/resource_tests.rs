//! Which protected resource metadata names the server (RFC 9728 section
//! 3.3), end to end: documents served on loopback, found from the
//! challenge or at the well-known URIs.

use std::io::{BufRead, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::*;

/// A web server on loopback answering `GET PATH` with the document
/// `documents` gives for the path, given the origin (`404` for none);
/// stopped when dropped.
struct Documents {
    origin: String,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Documents {
    fn serve(documents: impl Fn(&str, &str) -> Option<String> + Send + 'static) -> Documents {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let (stopped, at) = (Arc::clone(&stop), origin.clone());
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(mut conn) = conn else { continue };
                let mut reader = std::io::BufReader::new(conn.try_clone().unwrap());
                let mut line = String::new();
                let _ = reader.read_line(&mut line);
                let path = line.split(' ').nth(1).unwrap_or("").to_owned();
                let mut field = String::new();
                while reader.read_line(&mut field).is_ok_and(|n| n > 2) {
                    field.clear();
                }
                let (status, body) = match documents(&at, &path) {
                    Some(body) => ("200 OK", body),
                    None => ("404 Not Found", String::new()),
                };
                let _ = write!(
                    conn,
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Documents {
            origin,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Documents {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = std::net::TcpStream::connect(self.origin.trim_start_matches("http://"));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// What discovery makes of the document `resource` (`{o}` the origin)
/// served at the path `at` alone, for the server at `server` (`{o}` too),
/// found through the challenge when `challenged`, else at the well-known
/// URIs: `Ok` with the resource taken, or the refusal. (`{O}`: the
/// origin with its scheme in capitals.)
fn discover(server: &str, at: &str, resource: &str, challenged: bool) -> Result<String, String> {
    let (served_at, resource) = (at.to_owned(), resource.to_owned());
    let documents = Documents::serve(move |origin, path| {
        (path == served_at).then(|| {
            serde_json::json!({
                "resource": resource
                    .replace("{o}", origin)
                    .replace("{O}", &origin.replacen("http", "HTTP", 1)),
                "authorization_servers": ["https://as.example"],
            })
            .to_string()
        })
    });
    let o = &documents.origin;
    let server = Url::parse(&server.replace("{o}", o)).unwrap();
    let challenge = Challenge {
        resource_metadata: challenged.then(|| format!("{o}{at}")),
        ..Challenge::default()
    };
    resource_metadata(&Trust::default(), &server, &challenge)
        .map(|found| found.resource.replace(o.as_str(), "{o}"))
}

const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// A resource identical to the server's URL is taken wherever its
/// document is: at the server's path-inserted well-known URI, at the
/// root one (the spec lets a server at a path publish there), or where
/// the challenge says. (The case of the scheme and host and a slash at
/// the end do not count: spec 2026-07-28 basic/authorization, "Canonical
/// Server URI".)
#[test]
fn a_resource_identical_to_the_server_is_taken_wherever_its_document_is() {
    for (at, challenged) in [
        ("/.well-known/oauth-protected-resource/mcp", false),
        (WELL_KNOWN, false),
        ("/prm", true),
        ("/.well-known/oauth-protected-resource/mcp", true),
    ] {
        for resource in ["{o}/mcp", "{o}/mcp/"] {
            assert_eq!(
                discover("{o}/mcp", at, resource, challenged).as_deref(),
                Ok(resource),
                "{resource} at {at}"
            );
        }
    }
    assert!(discover("{o}/mcp", "/prm", "{O}/mcp", true).is_ok());
    // A server reached with a query (a key, a tenant) names its endpoint
    // without it, or with it.
    for resource in ["{o}/mcp", "{o}/mcp?tenant=a"] {
        assert!(discover("{o}/mcp?tenant=a", "/prm", resource, true).is_ok());
    }
    let refusal = discover("{o}/mcp?tenant=a", "/prm", "{o}/mcp?tenant=b", true).unwrap_err();
    assert!(refusal.contains("RFC 9728 section 3.3"), "{refusal}");
}

/// A resource whose path is a segment-wise prefix of the server's (the
/// server at `/mcp/x`, the resource `/mcp`; the server at `/mcp`, the
/// resource the origin) is taken only from the document at its own
/// well-known URI (RFC 9728 section 3.3's first rule: the document at
/// the URI built from a resource names that resource), which the owner
/// of that prefix serves, not the server beneath it. Found at the
/// server's own well-known URI, or at a URI the server's challenge names
/// (section 3.3's second rule: identical to the URL of the request), it
/// is refused: a server at `https://host/tenant-a/mcp` would otherwise
/// have the client ask for a token for all of `https://host` (the
/// resource indicator sent is the document's `resource`), and could use
/// it at its neighbours. Before the fix both were taken, as the
/// TypeScript SDK takes them.
#[test]
fn a_prefix_of_the_server_is_taken_only_from_its_own_well_known_document() {
    // Its own well-known URI: the root's for the origin (the conformance
    // suite's auth/metadata-var2), the path-inserted one for a path, found
    // there or named by the challenge.
    assert_eq!(
        discover("{o}/mcp", WELL_KNOWN, "{o}", false).as_deref(),
        Ok("{o}")
    );
    assert_eq!(
        discover("{o}/mcp", WELL_KNOWN, "{o}/", true).as_deref(),
        Ok("{o}/")
    );
    assert_eq!(
        discover(
            "{o}/mcp/x",
            "/.well-known/oauth-protected-resource/mcp",
            "{o}/mcp",
            true
        )
        .as_deref(),
        Ok("{o}/mcp")
    );
    // Another document: the server's own well-known one, or one its
    // challenge names.
    for (at, challenged) in [
        ("/.well-known/oauth-protected-resource/mcp/x", false),
        ("/mcp/x/prm", true),
        ("/.well-known/oauth-protected-resource/mcp/x", true),
    ] {
        let refusal = discover("{o}/mcp/x", at, "{o}/mcp", challenged).unwrap_err();
        assert!(refusal.contains("RFC 9728 section 3.3"), "{at}: {refusal}");
    }
    let refusal = discover("{o}/mcp", "/prm", "{o}", true).unwrap_err();
    assert!(refusal.contains("RFC 9728 section 3.3"), "{refusal}");
}

/// A resource whose path is a prefix of the server's, but not at a `/`
/// (`/mc` for `/mcp`), or that names a path beneath it, is another
/// resource, refused wherever its document is, its own well-known URI
/// included. (Taken on main neither.)
#[test]
fn a_prefix_that_is_not_a_segment_of_the_path_is_refused() {
    for (server, resource) in [
        ("{o}/mcp", "{o}/mc"),
        ("{o}/mcp", "{o}/mcp/x"),
        ("{o}/mcp", "{o}/mcp?x"),
    ] {
        for (at, challenged) in [
            ("/.well-known/oauth-protected-resource/mcp", false),
            (WELL_KNOWN, false),
            ("/.well-known/oauth-protected-resource/mc", true),
            ("/.well-known/oauth-protected-resource/mcp/x", true),
        ] {
            let refusal = discover(server, at, resource, challenged).unwrap_err();
            assert!(
                refusal.contains("RFC 9728 section 3.3"),
                "{resource} at {at}: {refusal}"
            );
        }
    }
}

/// A resource of another origin (scheme, host or port) is refused
/// wherever its document is. (Refused on main too.)
#[test]
fn a_resource_of_another_origin_is_refused() {
    for resource in [
        "https://evil.example/mcp",
        "https://127.0.0.1/mcp",
        "http://127.0.0.1:1/mcp",
        "http://localhost/mcp",
        "https://evil.example",
    ] {
        for (at, challenged) in [
            ("/.well-known/oauth-protected-resource/mcp", false),
            (WELL_KNOWN, false),
            ("/prm", true),
        ] {
            let refusal = discover("{o}/mcp", at, resource, challenged).unwrap_err();
            assert!(
                refusal.contains("RFC 9728 section 3.3"),
                "{resource} at {at}: {refusal}"
            );
        }
    }
}

/// Review review-fixes15c. A server that publishes one document, its
/// origin as the `resource`, at every protected resource well-known URI
/// (a catch-all route, or "the same document at both" for older
/// clients) and names none in its challenge: the path-inserted document
/// is refused (it names more than the server, and is not the origin's
/// own well-known URI), and the root one, which is the origin's own and
/// would be taken, is then asked. On left15 the refusal ended the
/// discovery ("is for 'http://127.0.0.1:PORT', not for ...: refused"),
/// where main took the origin from the first document.
#[test]
fn a_refused_path_inserted_document_leaves_the_root_one_to_be_asked() {
    let documents = Documents::serve(|origin, path| {
        path.starts_with(WELL_KNOWN).then(|| {
            serde_json::json!({
                "resource": origin,
                "authorization_servers": ["https://as.example"],
            })
            .to_string()
        })
    });
    let o = &documents.origin;
    let server = Url::parse(&format!("{o}/mcp")).unwrap();
    let found = resource_metadata(&Trust::default(), &server, &Challenge::default());
    assert_eq!(found.map(|m| m.resource), Ok(o.clone()));
    // Where the root document is not the origin's (another prefix, or
    // none), the refusal is what the discovery ends with.
    let refusal = discover(
        "{o}/mcp/x",
        "/.well-known/oauth-protected-resource/mcp/x",
        "{o}/mcp",
        false,
    )
    .unwrap_err();
    assert!(refusal.contains("RFC 9728 section 3.3"), "{refusal}");
}

/// Review review-fixes15c. Claim: a spelling trick has a document name
/// more than the server, or another server: a default port written or
/// not, a percent-encoded or dot-segment path, a prefix with a `/` at
/// its end short of a segment, a query, a document URL spelled another
/// way than the resource's own well-known URI. False: the default port
/// and the case of the scheme and host are the same server; every other
/// spelling is another resource, refused (a server that spells its own
/// URL so is refused too: strict, never broader).
#[test]
fn spelling_tricks_name_no_more_than_the_server() {
    let url = |u: &str| Url::parse(u).unwrap();
    let server = url("https://h.example/a/mcp");
    let path_inserted = url("https://h.example/.well-known/oauth-protected-resource/a/mcp");
    let root = url("https://h.example/.well-known/oauth-protected-resource");
    let of_a = url("https://h.example/.well-known/oauth-protected-resource/a");
    for resource in [
        "https://h.example:443/a/mcp",
        "HTTPS://H.EXAMPLE/a/mcp/",
        "https://h.example/a/mcp",
    ] {
        assert!(
            names_server(resource, &server, &path_inserted),
            "{resource}"
        );
    }
    let with_query = url("https://h.example/a/mcp?x=1");
    assert!(names_server(
        "https://h.example/a/mcp?x=1",
        &with_query,
        &path_inserted
    ));
    assert!(!names_server(
        "https://h.example/a/mcp?x=2",
        &with_query,
        &path_inserted
    ));
    assert!(names_server("https://h.example:443", &server, &root));
    assert!(names_server("https://h.example/a/", &server, &of_a));
    for (resource, document) in [
        ("https://h.example/a/%6Dcp", &path_inserted),
        ("https://h.example/a/./mcp", &path_inserted),
        ("https://h.example/b/../a/mcp", &path_inserted),
        ("https://h.example:8443/a/mcp", &path_inserted),
        ("http://h.example/a/mcp", &path_inserted),
        ("https://user@h.example/a/mcp", &path_inserted),
        ("https://h.example/a/mcp#f", &path_inserted),
        ("https://h.example/a/mcp?x=1", &path_inserted),
        ("https://h.example/a/mc/", &path_inserted),
        (
            "https://h.example/%61",
            &url("https://h.example/.well-known/oauth-protected-resource/%61"),
        ),
        ("https://h.example/a", &path_inserted),
        ("https://h.example/a", &root),
        ("https://h.example", &path_inserted),
        ("https://h.example", &of_a),
        (
            "https://h.example/a",
            &url("https://h.example/.well-known/oauth-protected-resource/a/"),
        ),
        (
            "https://h.example/a",
            &url("https://h.example/.well-known/oauth-protected-resource/a?x"),
        ),
        (
            "https://h.example/a",
            &url("https://h.example/.well-known/oauth-protected-resource/b/../a"),
        ),
        (
            "https://h.example/a",
            &url("https://h.example:444/.well-known/oauth-protected-resource/a"),
        ),
        (
            "https://h.example/",
            &url("https://h.example:444/.well-known/oauth-protected-resource"),
        ),
        ("https://h.example./a/mcp", &path_inserted),
        ("https://xn--h-1ga.example/a/mcp", &path_inserted),
    ] {
        assert!(
            !names_server(resource, &server, document),
            "{resource} at {document}"
        );
    }
}

/// Left16: RFC 9728 section 3.1 inserts the well-known string "between
/// the host component and the path and/or query components": a server
/// reached with a query (a tenant, a key) publishes its document at the
/// well-known URI with that query, which is asked first; the root
/// well-known URI, the origin's document, has none. On main the query was
/// dropped: the document of the server without its query was asked for
/// (a 404 here, so "no usable protected resource metadata was found").
#[test]
fn a_server_with_a_query_is_asked_for_its_document_at_the_well_known_uri_with_that_query() {
    for (server, at) in [
        (
            "{o}/mcp?tenant=a",
            "/.well-known/oauth-protected-resource/mcp?tenant=a",
        ),
        (
            "{o}/?tenant=a",
            "/.well-known/oauth-protected-resource?tenant=a",
        ),
        (
            "{o}?tenant=a",
            "/.well-known/oauth-protected-resource?tenant=a",
        ),
    ] {
        assert_eq!(
            discover(server, at, server, false).as_deref(),
            Ok(server),
            "{server}"
        );
    }
    // The root one is still asked after it, without the query.
    assert_eq!(
        discover("{o}/mcp?tenant=a", WELL_KNOWN, "{o}/mcp?tenant=a", false).as_deref(),
        Ok("{o}/mcp?tenant=a")
    );
}

/// Review left16: the query is kept byte for byte (percent-encodings, a
/// `/` or `?` inside it, an empty one), beside a path that ends with `/`,
/// and a document at the query-inserted URI that names a resource
/// broader than the server (its origin) is still refused there: only the
/// resource's own well-known URI, which has no query, may name it.
#[test]
fn the_query_is_inserted_as_written_and_names_no_broader_resource() {
    for (server, at) in [
        (
            "{o}/mcp/?t=a%26b&next=/x?y",
            "/.well-known/oauth-protected-resource/mcp/?t=a%26b&next=/x?y",
        ),
        (
            "{o}/a/b?k=%E2%82%AC",
            "/.well-known/oauth-protected-resource/a/b?k=%E2%82%AC",
        ),
        ("{o}/mcp?", "/.well-known/oauth-protected-resource/mcp?"),
    ] {
        assert_eq!(
            discover(server, at, server, false).as_deref(),
            Ok(server),
            "{server}"
        );
    }
    let refused = discover(
        "{o}/mcp?tenant=a",
        "/.well-known/oauth-protected-resource/mcp?tenant=a",
        "{o}",
        false,
    );
    assert!(
        refused.as_ref().is_err_and(|e| e.contains("refused")),
        "{refused:?}"
    );
    assert!(
        refused.as_ref().is_err_and(|e| !e.contains("tenant=a")),
        "{refused:?}"
    );
}

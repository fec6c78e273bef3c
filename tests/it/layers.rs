//! The crate's layers (ARCHITECTURE.md): the ground modules (`jsonrpc`,
//! `transport`, `types`, `version`, `outcome`, ...) name neither side, and
//! the server and the client never name each other; only the proxy, on
//! top of both, names the two. Checked on the source
//! text, doc links included, so that a stray `use` fails here before it
//! ties the two sides together.

use std::fs;
use std::path::{Path, PathBuf};

/// How the server side is named from elsewhere in the crate: its modules
/// and the crate-root re-exports of its items.
const SERVER: &[&str] = &[
    "crate::server",
    "crate::signal",
    "crate::Server",
    "crate::ServerBuilder",
    "crate::StopHandle",
    "crate::Notifier",
    "crate::RequestContext",
    "crate::RequestMeta",
    "crate::TokenInfo",
    "crate::CancelToken",
    "crate::ResourceRequest",
    "crate::CacheHints",
    "crate::Elicited",
    "crate::StructuredOutput",
    "crate::MemoryTaskStore",
    "crate::StoredTask",
    "crate::TaskMode",
    "crate::TaskStore",
    "crate::HttpOptions",
    "crate::Unauthorized",
    "crate::ProtectedResource",
];

/// How the client side is named from elsewhere in the crate.
const CLIENT: &[&str] = &[
    "crate::client",
    "crate::Client",
    "crate::ClientBuilder",
    "crate::Era",
    "crate::EraPolicy",
    "crate::Pages",
    "crate::PendingCall",
    "crate::RequestOptions",
    "crate::RestartPolicy",
    "crate::Subscription",
    "crate::SubscriptionEnd",
    "crate::SubscriptionEvent",
    "crate::TaskHandle",
    "crate::ToolCallStart",
    "crate::WireDirection",
];

#[test]
fn server_and_client_stand_side_by_side_on_the_ground() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    collect(&src, &mut files);
    assert!(
        files.len() > 20,
        "found only {} files under src/",
        files.len()
    );
    let mut found = Vec::new();
    for file in &files {
        let rel = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let forbidden: Vec<&str> = if rel.starts_with("server/") || rel == "signal.rs" {
            CLIENT.to_vec()
        } else if rel.starts_with("client/") {
            SERVER.to_vec()
        } else if rel == "lib.rs" || rel.starts_with("proxy/") {
            // The crate root re-exports both sides; the proxy stands on
            // both (a server built from a client), named by neither.
            continue;
        } else if rel.starts_with("bin/") {
            // The command line is a crate of its own that uses the library
            // (`mcp_stdio::...`), not a layer of it.
            continue;
        } else {
            SERVER.iter().chain(CLIENT).copied().collect()
        };
        let text = fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            for name in &forbidden {
                if names(line, name) {
                    found.push(format!("src/{rel}:{}: {name}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(found.is_empty(), "layers crossed:\n{}", found.join("\n"));
}

/// Whether `line` names `path` itself (not a longer identifier that
/// starts with it, such as `crate::Era` in `crate::EraPolicy`).
fn names(line: &str, path: &str) -> bool {
    line.match_indices(path).any(|(at, _)| {
        let next = line[at + path.len()..].chars().next();
        !next.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

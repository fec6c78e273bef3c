//! A server that publishes changes: a clock resource that ticks every
//! second, and (optionally) a file whose changes are watched.
//!
//! ```text
//! $ cargo run --example subscriptions -- /tmp/notes.txt
//! {"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"resourceSubscriptions":["clock://now"]}}}
//! {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1},"notifications":{"resourceSubscriptions":["clock://now"]}}}
//! {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1},"uri":"clock://now"}}
//! {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1},"uri":"clock://now"}}
//! ```
//!
//! Close stdin (Ctrl-D) and the listen request gets its final result:
//! `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":1,...}}}`.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcp_stdio::types::{ReadResourceResult, Resource, ResourceContents};
use mcp_stdio::{ErrorObject, Server, Transport};

fn main() -> Result<(), mcp_stdio::Error> {
    let watched: Option<PathBuf> = std::env::args_os().nth(1).map(PathBuf::from);
    let mut builder = Server::builder("subscriptions-demo", "1.0.0").resource(
        Resource::new("clock://now", "now"),
        |_ctx, req| {
            let secs = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            Ok(ReadResourceResult::new(vec![ResourceContents::text(
                &req.uri,
                secs.to_string(),
            )]))
        },
    );
    if let Some(path) = watched.clone() {
        let uri = file_uri(&path);
        builder = builder.resource(Resource::new(uri, "watched file"), move |_ctx, req| {
            let text = std::fs::read_to_string(&path).map_err(|e| {
                ErrorObject::internal_error(format!("reading {}: {e}", path.display()))
            })?;
            Ok(ReadResourceResult::new(vec![ResourceContents::text(
                &req.uri, text,
            )]))
        });
    }
    let server = builder.build();

    // Any thread can publish: each event reaches exactly the subscriptions
    // that asked for it, tagged with their subscription id.
    let notifier = server.notifier();
    std::thread::spawn(move || {
        let mut last_modified = None;
        loop {
            std::thread::sleep(Duration::from_secs(1));
            notifier.resource_updated("clock://now");
            if let Some(path) = &watched {
                let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
                if last_modified.is_some() && modified != last_modified {
                    notifier.resource_updated(&file_uri(path));
                }
                last_modified = modified;
            }
        }
    });

    mcp_stdio::signal::stop_on_signals(server.stop_handle())?;
    server.serve(Transport::stdio())
}

fn file_uri(path: &std::path::Path) -> String {
    let absolute = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    format!("file://{}", absolute.display())
}

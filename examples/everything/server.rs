//! Builds the everything server; `main.rs` serves it over stdio, and the
//! crate's tests serve the very same server in memory.

use mcp_stdio::{Server, ServerBuilder};

// Part C (the Tasks extension's fixtures) lives beside this file; every
// includer of this module gets it with it.
#[path = "tasks.rs"]
pub(crate) mod tasks;

/// The fixture server of FIXTURES.md.
#[allow(
    dead_code,
    reason = "the tests build it; the example's main goes through build_with"
)]
pub fn build() -> Server {
    build_with(|builder| builder)
}

/// The fixture server with whatever `extra` registers on top (for tests).
pub fn build_with(extra: impl FnOnce(ServerBuilder) -> ServerBuilder) -> Server {
    let builder = Server::builder("mcp-stdio-everything", env!("CARGO_PKG_VERSION"))
        .instructions(
            "Fixture server of mcp-stdio: every tool, resource and prompt is a test fixture.",
        )
        // Every fixture must be on the first page of every list.
        .page_size(1000);
    let builder = crate::fixtures::register(builder);
    let builder = tasks::register(crate::conformance::register(builder));
    extra(builder).build()
}

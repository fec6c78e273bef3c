//! A synchronous implementation of the [Model Context Protocol] (MCP),
//! revision 2026-07-28, over the stdio transport: plain OS threads and
//! channels, no async runtime.
//!
//! [Model Context Protocol]: https://modelcontextprotocol.io

#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![deny(missing_debug_implementations)]
#![warn(rust_2018_idioms)]

mod context;
mod error;
mod incoming;
pub mod jsonrpc;
mod server;
pub mod signal;
mod transport;
pub mod types;
mod uri_template;

pub use context::{CancelToken, RequestContext, RequestMeta};
pub use error::Error;
pub use jsonrpc::{ErrorObject, RequestId, error_code};
pub use server::{
    CacheHints, Outcome, PromptArguments, ResourceRequest, SUPPORTED_VERSIONS, Server,
    ServerBuilder, StopHandle, ToolOutcome,
};
pub use transport::{DEFAULT_MAX_LINE_BYTES, MemoryReader, MemoryWriter, Transport, memory_pipe};
pub use uri_template::UriTemplate;

//! The echo tool of `examples/echo`, on rmcp 3.11's Streamable HTTP server
//! in stateless mode (`legacy_session_mode: false`, the `NeverSessionManager`)
//! with JSON responses: the rmcp side of `scripts/bench-http.sh`.
//!
//! ```text
//! rmcp-http-echo 127.0.0.1:0     # prints http://127.0.0.1:PORT/mcp on stderr
//! ```

use std::sync::Arc;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    text: String,
}

/// The server: `#[tool_handler]` routes calls through `Self::tool_router()`.
#[derive(Clone)]
struct Echo;

#[tool_router]
impl Echo {
    #[tool(description = "Returns its text unchanged.")]
    async fn echo(&self, Parameters(args): Parameters<EchoArgs>) -> String {
        args.text
    }
}

#[tool_handler]
impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("rmcp-http-echo", env!("CARGO_PKG_VERSION")))
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:0".into());
    let mut config = StreamableHttpServerConfig::default();
    config.legacy_session_mode = false;
    config.json_response = true;
    let service = StreamableHttpService::new(|| Ok(Echo), Arc::new(NeverSessionManager::default()), config);
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("http://{}/mcp", listener.local_addr()?);
    axum::serve(listener, app).await
}

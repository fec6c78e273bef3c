//! Connects to any stdio MCP server and prints what it offers: its era,
//! identity, tools, resources, templates and prompts. Works against modern
//! servers and legacy (initialize-era) ones alike.
//!
//! ```text
//! cargo run --example client -- cargo run -q --example everything
//! cargo run --example client -- npx -y @modelcontextprotocol/server-everything
//! ```

use std::process::Command;

use mcp_stdio::{Client, Error};

fn main() -> Result<(), Error> {
    let mut args = std::env::args().skip(1);
    let Some(program) = args.next() else {
        eprintln!("usage: client <server command> [args...]");
        std::process::exit(2);
    };
    let mut command = Command::new(program);
    command.args(args);
    let client = Client::spawn(command)?;

    println!("era: {:?}", client.era());
    if let Some(info) = client.server_info() {
        println!("server: {} {}", info.name, info.version);
    }
    if let Some(instructions) = client.instructions() {
        println!("instructions: {instructions}");
    }
    let caps = client.server_capabilities();
    println!("capabilities: {}", serde_json::to_string(&caps)?);
    if caps.tools.is_some() {
        println!("tools:");
        for tool in client.tools() {
            let tool = tool?;
            println!("  {} - {}", tool.name, tool.description.unwrap_or_default());
        }
    }
    if caps.resources.is_some() {
        println!("resources:");
        for resource in client.resources() {
            let resource = resource?;
            println!("  {} ({})", resource.uri, resource.name);
        }
        println!("resource templates:");
        for template in client.resource_templates() {
            let template = template?;
            println!("  {} ({})", template.uri_template, template.name);
        }
    }
    if caps.prompts.is_some() {
        println!("prompts:");
        for prompt in client.prompts() {
            let prompt = prompt?;
            println!(
                "  {} - {}",
                prompt.name,
                prompt.description.unwrap_or_default()
            );
        }
    }
    let status = client.close()?;
    println!("server exited: {status:?}");
    Ok(())
}

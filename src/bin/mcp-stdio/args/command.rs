//! The command named on the line, with its positional arguments: how
//! many each takes (a usage line when they do not fit), and "did you
//! mean" for a name that is no command.

use mcp_stdio::types::SubscriptionFilter;

use super::checks::{bearer_token, token_file_warning};
use super::pairs::string_pairs;
use super::{Command, Flags, List, ServeHttp, UsageError, oauth, tool_arguments, usage};

/// Every command, for "did you mean".
const COMMANDS: &[&str] = &[
    "info",
    "tools",
    "resources",
    "templates",
    "prompts",
    "call",
    "read",
    "prompt",
    "complete",
    "listen",
    "serve-http",
    "login",
    "logout",
    "check",
];

/// The command named `name`, with its positional arguments.
pub(super) fn command(name: &str, args: Vec<String>, flags: &Flags) -> Result<Command, UsageError> {
    let arity = |min: usize, max: usize, shape: &str| {
        if args.len() < min || args.len() > max {
            Err(usage(format!("usage: mcp-stdio {name} {shape}")))
        } else {
            Ok(())
        }
    };
    let command = match name {
        "help" => Command::Help,
        "info" => {
            arity(0, 0, "")?;
            Command::Info
        }
        "login" => {
            arity(0, 0, "")?;
            Command::Login
        }
        "logout" => {
            arity(0, 0, "")?;
            Command::Logout
        }
        "tools" | "resources" | "templates" | "prompts" => {
            arity(0, 0, "[--long]")?;
            Command::List(match name {
                "tools" => List::Tools,
                "resources" => List::Resources,
                "templates" => List::Templates,
                _ => List::Prompts,
            })
        }
        "call" => {
            arity(1, usize::MAX, "TOOL [JSON | key=value...]")?;
            Command::Call {
                tool: args[0].clone(),
                arguments: tool_arguments(&args[1..])?,
            }
        }
        "read" => {
            arity(1, 1, "URI")?;
            Command::Read {
                uri: args[0].clone(),
            }
        }
        "prompt" => {
            arity(1, usize::MAX, "NAME [key=value...]")?;
            Command::Prompt {
                name: args[0].clone(),
                arguments: string_pairs(&args[1..])?,
            }
        }
        "complete" => {
            let shape = "(prompt NAME | resource TEMPLATE) ARG VALUE [key=value...]";
            arity(4, usize::MAX, shape)?;
            let reference = match args[0].as_str() {
                "prompt" => serde_json::json!({ "type": "ref/prompt", "name": args[1] }),
                "resource" => serde_json::json!({ "type": "ref/resource", "uri": args[1] }),
                _ => return Err(usage(format!("usage: mcp-stdio complete {shape}"))),
            };
            Command::Complete {
                reference,
                argument: args[2].clone(),
                value: args[3].clone(),
                context: string_pairs(&args[4..])?,
            }
        }
        "listen" => {
            arity(
                0,
                0,
                "[--tools] [--prompts] [--resources] [--resource URI]...",
            )?;
            let none =
                !(flags.tools || flags.prompts || flags.resources) && flags.resource.is_empty();
            let on = |flag: bool| (flag || none).then_some(true);
            Command::Listen(SubscriptionFilter {
                tools_list_changed: on(flags.tools),
                prompts_list_changed: on(flags.prompts),
                resources_list_changed: on(flags.resources),
                resource_subscriptions: (!flags.resource.is_empty())
                    .then(|| flags.resource.clone()),
                task_ids: None,
            })
        }
        "serve-http" => {
            arity(0, 0, "[--listen ADDR] [--allow-origin ORIGIN]... -- SERVER")?;
            Command::ServeHttp(ServeHttp {
                listen: flags
                    .listen
                    .clone()
                    .unwrap_or_else(|| "127.0.0.1:8080".into()),
                allow_origins: flags.allow_origins.clone(),
                allow_hosts: flags.allow_hosts.clone(),
                max_body_bytes: flags.max_body_bytes,
                bearer_token: bearer_token(flags)?,
                token_file_warning: token_file_warning(flags),
                oauth: oauth::oauth(flags)?,
            })
        }
        "check" => {
            return Err(usage(
                "check comes first, its options after it: mcp-stdio check [OPTIONS] -- SERVER (mcp-stdio check --help)",
            ));
        }
        other => {
            let hint = crate::suggest::typo(other, COMMANDS.iter().copied()).unwrap_or_else(|| {
                ": info, tools, resources, templates, prompts, call, read, prompt, complete, listen, serve-http or check".to_owned()
            });
            return Err(usage(format!("unknown command {other:?}{hint}")));
        }
    };
    Ok(command)
}

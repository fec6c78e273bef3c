//! Schemas from Rust types, both ends in one process: a server whose tool,
//! prompt and elicitation form are all described by derived schemas, and a
//! client that reads the tool's typed result back.
//!
//! ```text
//! $ cargo run --example typed
//! ```
//!
//! No hand-written JSON Schema anywhere: `schemars` derives each from the
//! same type serde reads, so they cannot disagree.

use mcp_stdio::types::{
    ElicitRequestFormParams, ElicitRequestParams, ElicitRequestedSchema, ElicitResult,
    GetPromptResult, InputRequest, InputRequiredResult, Prompt, PromptMessage, Role, Tool,
};
use mcp_stdio::{Client, Elicited, Outcome, PromptArguments, Server, Transport};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Splits a bill between friends.
#[derive(Deserialize, JsonSchema)]
struct Split {
    /// The total, in cents.
    total_cents: u64,
    /// How many people share it.
    people: u32,
    /// A tip, in percent (none when absent).
    tip_percent: Option<u8>,
}

/// What each person pays.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Shares {
    /// Cents per person, rounded up.
    each_cents: u64,
    /// Who pays: filled in when the user said.
    payer: Option<String>,
}

/// Who pays the rounding.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Payer {
    /// Your name.
    name: String,
    /// Round up for everyone.
    generous: bool,
}

/// Writes a thank-you note.
#[derive(Deserialize, JsonSchema)]
struct Thanks {
    /// Who to thank.
    to: String,
    /// What for (a meal when absent).
    r#for: Option<String>,
}

fn server() -> Server {
    Server::builder("bills", "1.0.0")
        .structured_tool(
            Tool::new("split", "Splits a bill, asking who pays."),
            |ctx, args: Split| {
                let tip = args.total_cents * u64::from(args.tip_percent.unwrap_or(0)) / 100;
                let each = (args.total_cents + tip).div_ceil(u64::from(args.people.max(1)));
                Ok(match ctx.elicitation_as::<Payer>("payer")? {
                    Some(Elicited::Accepted(payer)) => Outcome::Complete(Shares {
                        each_cents: if payer.generous {
                            each.div_ceil(100) * 100
                        } else {
                            each
                        },
                        payer: Some(payer.name),
                    }),
                    Some(_) => Outcome::Complete(Shares {
                        each_cents: each,
                        payer: None,
                    }),
                    None => {
                        // A struct a form cannot express would be an error
                        // here, before anything is sent.
                        let form = ElicitRequestedSchema::for_type::<Payer>()?;
                        let ask = ElicitRequestFormParams::new("Who pays?", form);
                        let ask = InputRequest::Elicit(ElicitRequestParams::Form(ask));
                        let asks = [("payer".to_owned(), ask)].into();
                        Outcome::InputRequired(InputRequiredResult::new(asks))
                    }
                })
            },
        )
        .typed_prompt(
            Prompt::new("thanks", "Writes a thank-you note."),
            |_ctx, args: Thanks| {
                let what = args.r#for.unwrap_or_else(|| "the meal".into());
                let text = format!("Write a short thank-you note to {} for {what}.", args.to);
                Ok(GetPromptResult::new(vec![PromptMessage::text(
                    Role::User,
                    text,
                )]))
            },
        )
        .build()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (client_end, server_end) = Transport::memory();
    let server = server();
    let serving = std::thread::spawn(move || server.serve(server_end));
    let client = Client::builder()
        .on_elicitation(|request| {
            if let ElicitRequestParams::Form(form) = request {
                println!(
                    "← form {:?}: {}",
                    form.message,
                    serde_json::to_string(&form.requested_schema)?
                );
            }
            let answer = Payer {
                name: "Ada".into(),
                generous: true,
            };
            println!("→ {answer:?}");
            Ok(ElicitResult::accept_fields(&answer)?)
        })
        .connect(client_end)?;

    for tool in client.tools() {
        let tool = tool?;
        println!("tool {}", tool.name);
        println!("  inputSchema  {}", tool.input_schema);
        println!("  outputSchema {}", tool.output_schema.unwrap_or_default());
    }
    let arguments = json!({ "total_cents": 8650, "people": 3, "tip_percent": 10 });
    println!("→ tools/call split {arguments}");
    let shares: Shares = client.call_tool_as("split", arguments)?;
    println!("← {shares:?}");

    for prompt in client.prompts() {
        let prompt = prompt?;
        println!(
            "prompt {}: {}",
            prompt.name,
            serde_json::to_string(&prompt.arguments)?
        );
    }
    let mut arguments = PromptArguments::new();
    arguments.insert("to".into(), "Grace".into());
    let note = client.get_prompt("thanks", arguments)?.into_result()?;
    println!("← {}", serde_json::to_string(&note.messages[0].content)?);

    client.close()?;
    serving.join().expect("the server thread")?;
    Ok(())
}

//! Our client's part of `tests/scale_out.sh`: a task on replicas behind a
//! load balancer doing round robin, through this crate's HTTP client.
//!
//! ```text
//! replicas URL     (e.g. http://127.0.0.1:8080/mcp, nginx in front)
//! ```
//!
//! Calls `confirm_delete` (a task tool of the everything example, which
//! asks for a confirmation) with the Tasks extension on: the client follows
//! the task to its end by itself, polling `tasks/get` and answering with
//! `tasks/update`, each request landing wherever the balancer sends it.
//! Then starts another and cancels it. Prints one line per step; the script
//! reads the balancer's log for which replica served what. Exit status 1
//! on anything unexpected.

use mcp_stdio::types::{ElicitResult, TaskStatus};
use mcp_stdio::{Client, EraPolicy, Error, RequestOptions, ToolCallStart};
use serde_json::{Map, json};

fn main() {
    let url = std::env::args().nth(1).unwrap_or_default();
    if let Err(e) = run(&url) {
        eprintln!("replicas: {e}");
        std::process::exit(1);
    }
}

fn run(url: &str) -> Result<(), Error> {
    let client = Client::builder()
        .era(EraPolicy::ModernOnly)
        .tasks(true)
        .on_elicitation(|_| {
            let mut content = Map::new();
            content.insert("confirm".into(), json!(true));
            Ok(ElicitResult::accept(content))
        })
        .connect_url(url)?;
    let start = |filename: &str| match client.start_tool_call(
        "confirm_delete",
        json!({ "filename": filename }),
        RequestOptions::new(),
    )? {
        ToolCallStart::Task(task) => Ok(task),
        ToolCallStart::Immediate(_) => Err(Error::Protocol(
            "confirm_delete answered at once, not as a task".into(),
        )),
    };
    let task = start("ours.txt")?;
    let id = task.id().to_owned();
    let done = task.wait()?;
    println!("task {id}: {}", done.text_content());
    let task = start("kept.txt")?;
    task.cancel()?;
    let status = task.get()?.task.status;
    if status != TaskStatus::Cancelled {
        return Err(Error::Protocol(format!(
            "the cancelled task reads {status:?}"
        )));
    }
    println!("task {}: cancelled", task.id());
    client.close().map(drop)
}

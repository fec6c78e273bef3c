//! What a request came back with: its result read by `resultType`, before
//! the request's caller decides what a task means for it (`requests` for
//! every request, `tasks` for `tools/call`).

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use crate::error::Error;
use crate::outcome::Outcome;
use crate::types::CreateTaskResult;

/// What a request came back with: an outcome, or a task (Tasks
/// extension, `resultType: "task"`) still to be checked against what the
/// request and the client allow.
pub(crate) enum Reply<T> {
    /// A final result, or a request for input.
    Outcome(Outcome<T>),
    /// A `CreateTaskResult`.
    Task(CreateTaskResult),
}

/// Reads a result by its `resultType` (spec 2026-07-28 basic/index): absent
/// or `complete` is the final result, `input_required` asks for more input,
/// `task` announces a task (Tasks extension), anything else is invalid.
pub(crate) fn parse_reply<T: DeserializeOwned>(raw: &RawValue) -> Result<Reply<T>, Error> {
    #[derive(Deserialize)]
    struct Kind {
        #[serde(rename = "resultType", default)]
        result_type: Option<String>,
    }
    let kind: Kind = serde_json::from_str(raw.get())?;
    match kind.result_type.as_deref() {
        None | Some("complete") => Ok(Reply::Outcome(Outcome::Complete(serde_json::from_str(
            raw.get(),
        )?))),
        Some("input_required") => Ok(Reply::Outcome(Outcome::InputRequired(
            serde_json::from_str(raw.get())?,
        ))),
        Some("task") => {
            // A missing `taskId` or `status` fails here, as any result of
            // the wrong shape does.
            let created: CreateTaskResult = serde_json::from_str(raw.get())?;
            if created.task.task_id.is_empty() {
                return Err(Error::Protocol(
                    "the server answered with a task whose taskId is empty".into(),
                ));
            }
            Ok(Reply::Task(created))
        }
        Some(other) => Err(Error::Protocol(format!("unknown resultType {other:?}"))),
    }
}

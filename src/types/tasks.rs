//! The Tasks extension (`io.modelcontextprotocol/tasks`): a `tools/call`
//! answered with a task handle, then `tasks/get`, `tasks/update`,
//! `tasks/cancel` and `notifications/tasks` (spec
//! `extensions/tasks/tasks.md`, schema `extensions/tasks/schema.json`).
//!
//! Every shape is flat: a `CreateTaskResult` is a [`Task`] plus
//! `resultType: "task"`, a `tasks/get` result a [`DetailedTask`] plus
//! `resultType: "complete"`. Absent means not serialized: `result`,
//! `error` and `inputRequests` appear only with the status they belong to,
//! and `ttlMs` is the one field written as `null` (unlimited).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::{InputRequests, InputResponses, JsonObject, Meta, ResultType};
use crate::jsonrpc::ErrorObject;

/// The extension's identifier, the key under `capabilities.extensions`.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Where a task is (schema `TaskStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// The work is running.
    Working,
    /// The work waits for the answers to `inputRequests` (`tasks/update`).
    InputRequired,
    /// Done, with a result (a tool result with `isError: true` included).
    Completed,
    /// Ended by a JSON-RPC error.
    Failed,
    /// Cancelled before it finished.
    Cancelled,
}

impl TaskStatus {
    /// `completed`, `failed` and `cancelled`: nothing changes after them.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }

    /// The value as it appears on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }
}

/// A task's operational state (schema `Task`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The server-generated, unguessable id.
    pub task_id: String,
    /// Where the task is.
    pub status: TaskStatus,
    /// A human-readable word on the current state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// ISO 8601 (UTC, `2026-07-28T10:30:00.123Z`).
    pub created_at: String,
    /// ISO 8601; changes on every status change.
    pub last_updated_at: String,
    /// How long the task is kept after `createdAt`, in milliseconds;
    /// `None` (written `null`) for unlimited. Always present on the wire.
    #[serde(default)]
    pub ttl_ms: Option<u64>,
    /// How often the client should poll, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
}

/// A task with what its status carries (schema `DetailedTask`): the
/// outstanding `inputRequests` while `input_required`, the `result` once
/// `completed`, the `error` once `failed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DetailedTask {
    /// The task itself.
    #[serde(flatten)]
    pub task: Task,
    /// Every outstanding request (status `input_required`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// The request's result, as the request would have returned it
    /// (status `completed`; for `tools/call` a `CallToolResult`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<JsonObject>,
    /// The JSON-RPC error the request ended with (status `failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
}

impl DetailedTask {
    /// A task with nothing but its state (`working`, `cancelled`).
    pub fn new(task: Task) -> DetailedTask {
        DetailedTask {
            task,
            input_requests: None,
            result: None,
            error: None,
        }
    }

    /// What is wrong with the payload fields for the status, if anything:
    /// each status carries its own field and no other.
    pub fn shape_problem(&self) -> Option<String> {
        let status = self.task.status;
        let (inputs, result, error) = (
            self.input_requests.is_some(),
            self.result.is_some(),
            self.error.is_some(),
        );
        let expected = (
            status == TaskStatus::InputRequired,
            status == TaskStatus::Completed,
            status == TaskStatus::Failed,
        );
        if (inputs, result, error) == expected {
            return None;
        }
        Some(format!(
            "a {} task must carry {}",
            status.as_str(),
            match status {
                TaskStatus::InputRequired => "inputRequests and neither result nor error",
                TaskStatus::Completed => "result and neither error nor inputRequests",
                TaskStatus::Failed => "error and neither result nor inputRequests",
                _ => "none of inputRequests, result and error",
            }
        ))
    }
}

/// The answer to a request the server turned into a task (schema
/// `CreateTaskResult`): the task's seed state, flat, with
/// `resultType: "task"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateTaskResult {
    /// The task.
    #[serde(flatten)]
    pub task: Task,
    /// `task`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl CreateTaskResult {
    /// The result announcing `task`.
    pub fn new(task: Task) -> CreateTaskResult {
        CreateTaskResult {
            task,
            result_type: Some(ResultType::Task),
            meta: None,
        }
    }
}

/// The result of `tasks/get` (schema `GetTaskResult`): the task as it is
/// now, with `resultType: "complete"` whatever its status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskResult {
    /// The task and its payload.
    #[serde(flatten)]
    pub task: DetailedTask,
    /// `complete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Params of `tasks/get` and `tasks/cancel` (schemas `GetTaskRequest`,
/// `CancelTaskRequest`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdParams {
    /// The task.
    pub task_id: String,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Params of `tasks/update` (schema `UpdateTaskRequest`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateTaskRequestParams {
    /// The task.
    pub task_id: String,
    /// Answers to outstanding `inputRequests`, by their keys.
    pub input_responses: InputResponses,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// `time` as the extension writes timestamps: ISO 8601 in UTC with
/// milliseconds, `2026-07-28T10:30:00.123Z`.
pub fn iso8601(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    let secs = since.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_millis()
    )
}

/// The time a stamp [`iso8601`] wrote stands for; `None` for any other
/// text (another format, a date before 1970).
#[cfg(feature = "server")]
pub(crate) fn parse_iso8601(stamp: &str) -> Option<SystemTime> {
    let b = stamp.as_bytes();
    if b.len() != 24 || b[23] != b'Z' {
        return None;
    }
    let number = |from: usize, to: usize| -> Option<u64> {
        let text = stamp.get(from..to)?;
        text.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| text.parse().ok())?
    };
    let seps = [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b':'),
        (16, b':'),
        (19, b'.'),
    ];
    if seps.iter().any(|&(at, sep)| b[at] != sep) {
        return None;
    }
    let (year, month, day) = (number(0, 4)?, number(5, 7)?, number(8, 10)?);
    let (hour, minute, second) = (number(11, 13)?, number(14, 16)?, number(17, 19)?);
    let millis = number(20, 23)?;
    if year < 1970 || !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second;
    UNIX_EPOCH.checked_add(Duration::from_millis(secs.checked_mul(1000)? + millis))
}

/// The day count since 1970-01-01 of a proleptic Gregorian date (Howard
/// Hinnant's `days_from_civil`, for dates from 1970), the inverse of
/// [`civil_from_days`].
#[cfg(feature = "server")]
fn days_from_civil(year: u64, month: u64, day: u64) -> u64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year / 400;
    let yoe = year - era * 400;
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`, for days after the epoch).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    #[cfg(feature = "server")]
    fn a_stamp_reads_back_as_the_time_it_was_written_for() {
        for ms in [0, 951_782_400_000, 1_785_000_000_123, 4_102_444_799_999] {
            let at = UNIX_EPOCH + Duration::from_millis(ms);
            assert_eq!(parse_iso8601(&iso8601(at)), Some(at), "{}", iso8601(at));
        }
        for other in [
            "2026-07-28T10:30:00Z",
            "2026-07-28 10:30:00.000Z",
            "2026-13-01T00:00:00.000Z",
            "x",
        ] {
            assert_eq!(parse_iso8601(other), None, "{other}");
        }
    }

    fn task(status: TaskStatus) -> Task {
        Task {
            task_id: "t1".into(),
            status,
            status_message: None,
            created_at: "2026-07-28T10:30:00.000Z".into(),
            last_updated_at: "2026-07-28T10:30:00.000Z".into(),
            ttl_ms: None,
            poll_interval_ms: Some(200),
        }
    }

    #[test]
    fn create_task_result_is_flat_with_a_null_ttl() {
        let result = CreateTaskResult::new(task(TaskStatus::Working));
        assert_eq!(
            serde_json::to_value(&result).unwrap(),
            json!({
                "taskId": "t1", "status": "working",
                "createdAt": "2026-07-28T10:30:00.000Z",
                "lastUpdatedAt": "2026-07-28T10:30:00.000Z",
                "ttlMs": null, "pollIntervalMs": 200, "resultType": "task"
            })
        );
    }

    #[test]
    fn a_detailed_task_reads_back_and_checks_its_shape() {
        let text = r#"{"taskId":"t1","status":"failed","createdAt":"a","lastUpdatedAt":"b","ttlMs":5,"error":{"code":-32603,"message":"boom"},"resultType":"complete"}"#;
        let got: GetTaskResult = serde_json::from_str(text).unwrap();
        assert_eq!(got.task.task.status, TaskStatus::Failed);
        assert_eq!(got.task.error.as_ref().unwrap().code, -32603);
        assert_eq!(got.task.shape_problem(), None);
        let mut wrong = got.task.clone();
        wrong.result = Some(JsonObject::new());
        assert!(wrong.shape_problem().unwrap().contains("failed"));
    }

    #[test]
    fn timestamps_are_extended_iso8601_utc_with_millis() {
        assert_eq!(iso8601(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_785_234_600_123);
        assert_eq!(iso8601(t), "2026-07-28T10:30:00.123Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(iso8601(leap), "2000-02-29T00:00:00.000Z");
    }

    /// A task's input requests are read through `flatten` (the task is
    /// buffered whole first): a form inside keeps its fields' order there
    /// too, and reads at all.
    #[test]
    fn a_tasks_form_keeps_its_fields_order() {
        let text = r#"{"taskId":"t","status":"input_required","createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z","ttlMs":null,"inputRequests":{"k":{"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"number"}}}}}},"resultType":"complete"}"#;
        let got: GetTaskResult = serde_json::from_str(text).unwrap();
        let requests = got.task.input_requests.unwrap();
        let crate::types::InputRequest::Elicit(crate::types::ElicitRequestParams::Form(form)) =
            &requests["k"]
        else {
            panic!("{requests:?}");
        };
        let names: Vec<&String> = form.requested_schema.properties.keys().collect();
        assert_eq!(names, ["zeta", "alpha"]);
    }
}

//! A task as [`RedisTaskStore`](crate::RedisTaskStore) keeps it in Redis:
//! one JSON string per task, and the rule for a task whose lease lapsed.
//! Pure functions, tested without Redis.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::jsonrpc::ErrorObject;
use crate::server::request_meta::Owner;
use crate::server::tasks::{StoredTask, set_status};
use crate::types::{DetailedTask, InputResponses, TaskStatus};

/// What is stored under a task's key: what makes each write observable,
/// its version (one more at each write), the ids of the last plain writes
/// and the id of the worker's last write, so that a write tried again
/// after its reply was lost finds that it was applied
/// (`RedisTaskStore::update`); the task as `tasks/get` shows it, the
/// answers its handler has not taken yet, and when it may be forgotten
/// (milliseconds since the Unix epoch).
///
/// The version comes first (`{"version":N,...`): the script that writes a
/// task reads it there to compare, without parsing the rest.
///
/// `owner` (whom the creating request's token stood for,
/// `StoredTask::owner`) came after the first records: a record without it
/// is a task bound to nobody, as every task was before (with
/// authorization on, reached only by tokens that name nobody). A replica of the
/// version before reads a record with it (serde skips a member it does
/// not know) and serves the task to anyone with its id, as it always did;
/// when it writes the task (`tasks/update`, `tasks/cancel`, the lease
/// rule) it writes the record it knows, without `owner`, and from then on
/// the task is bound to nobody on every replica. A task's binding holds
/// once no replica of that version is left.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    #[serde(default)]
    version: u64,
    task: DetailedTask,
    #[serde(default, skip_serializing_if = "InputResponses::is_empty")]
    answers: InputResponses,
    expires_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    writes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    worker: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    owner: Option<RecordOwner>,
}

/// An [`Owner`] as a record keeps it: `{"subject":"alice"}` or
/// `{"client":"app"}` without an issuer, as before issuers
/// ([`TokenInfo::issuer`](crate::TokenInfo::issuer)), and
/// `{"issuedSubject":{"issuer":"https://a.example","subject":"alice"}}` or
/// `{"issuedClient":{"issuer":...,"client":"app"}}` with one. A replica of
/// a version before issuers cannot read a record with an issued owner
/// (an externally tagged variant it does not know): it answers `-32603`
/// for that task and writes nothing to it, never taking it for the
/// subject's of another issuer; so set `TokenInfo::issuer` once every
/// replica runs a version that knows it.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum RecordOwner {
    Subject(String),
    Client(String),
    IssuedSubject { issuer: String, subject: String },
    IssuedClient { issuer: String, client: String },
}

impl From<&Owner> for RecordOwner {
    fn from(owner: &Owner) -> RecordOwner {
        match owner.clone() {
            Owner::Subject {
                issuer: None,
                subject,
            } => RecordOwner::Subject(subject),
            Owner::Client {
                issuer: None,
                client_id,
            } => RecordOwner::Client(client_id),
            Owner::Subject {
                issuer: Some(issuer),
                subject,
            } => RecordOwner::IssuedSubject { issuer, subject },
            Owner::Client {
                issuer: Some(issuer),
                client_id,
            } => RecordOwner::IssuedClient {
                issuer,
                client: client_id,
            },
        }
    }
}

impl From<RecordOwner> for Owner {
    fn from(owner: RecordOwner) -> Owner {
        match owner {
            RecordOwner::Subject(subject) => Owner::Subject {
                issuer: None,
                subject,
            },
            RecordOwner::Client(client_id) => Owner::Client {
                issuer: None,
                client_id,
            },
            RecordOwner::IssuedSubject { issuer, subject } => Owner::Subject {
                issuer: Some(issuer),
                subject,
            },
            RecordOwner::IssuedClient { issuer, client } => Owner::Client {
                issuer: Some(issuer),
                client_id: client,
            },
        }
    }
}

/// How many plain write ids a record keeps: a retry of a plain update
/// finds its own write unless this many others wrote the task between the
/// lost reply and the retry (then it knows it cannot tell:
/// `RedisTaskStore::update`). The worker's write id has a place of its
/// own ([`Writer::Worker`]), which no plain write takes.
pub(crate) const WRITES_KEPT: usize = 8;

/// Who writes a record, with the id of the write.
#[derive(Clone, Copy)]
pub(crate) enum Writer<'a> {
    /// A plain update (`tasks/update`'s answers, a cancellation, a handler
    /// taking its answers, the lease rule): its id joins the last
    /// [`WRITES_KEPT`].
    Update(&'a str),
    /// The task's worker, one step at a time (its questions, its end,
    /// `TaskStore::update_as`): its id takes the place of the worker's
    /// last, where no plain write pushes it out, so that however many
    /// answers a client gives meanwhile, a retry finds it.
    Worker(&'a str),
}

impl Writer<'_> {
    pub fn id(&self) -> &str {
        match self {
            Writer::Update(id) | Writer::Worker(id) => id,
        }
    }
}

/// A task as read from Redis, with its write history.
pub(crate) struct Read {
    pub task: StoredTask,
    pub version: u64,
    pub writes: Vec<String>,
    /// The id of the worker's last write.
    pub worker: Option<String>,
}

impl Read {
    /// Whether the write `id` was applied to this record: one of the last
    /// plain writes, or the worker's last. A worker writes one step at a
    /// time and only its writes set `worker`, so a worker's write whose id
    /// is not there was not applied.
    pub fn has_written(&self, id: &str) -> bool {
        self.writes.iter().any(|w| w == id) || self.worker.as_deref() == Some(id)
    }
}

/// The JSON string stored for `task`, a new task (version 1).
pub(crate) fn encode(task: &StoredTask) -> Result<String, ErrorObject> {
    to_json(&record(task, 1, Vec::new(), None))
}

/// The JSON string stored for `task` written over `over` (the record as
/// read) by `by`: the next version, the plain write ids kept, the worker's
/// id kept or replaced.
pub(crate) fn encode_write(
    task: &StoredTask,
    over: &Read,
    by: Writer<'_>,
) -> Result<String, ErrorObject> {
    let mut writes = over.writes.clone();
    let mut worker = over.worker.clone();
    match by {
        Writer::Update(id) => {
            writes.push(id.to_owned());
            let skip = writes.len().saturating_sub(WRITES_KEPT);
            writes.drain(..skip);
        }
        Writer::Worker(id) => worker = Some(id.to_owned()),
    }
    to_json(&record(task, over.version + 1, writes, worker))
}

fn record(task: &StoredTask, version: u64, writes: Vec<String>, worker: Option<String>) -> Record {
    Record {
        version,
        task: task.task.clone(),
        answers: task.answers.clone(),
        expires_ms: task.expires.map(unix_ms),
        writes,
        worker,
        owner: task.owner.as_ref().map(RecordOwner::from),
    }
}

fn to_json(record: &Record) -> Result<String, ErrorObject> {
    serde_json::to_string(record).map_err(|e| {
        ErrorObject::internal_error(format!("the task does not serialize for Redis: {e}"))
    })
}

/// The task stored as `json`, with its write history.
pub(crate) fn decode_read(json: &str) -> Result<Read, ErrorObject> {
    let record: Record = serde_json::from_str(json).map_err(|e| {
        ErrorObject::internal_error(format!(
            "a task in Redis is not one this store wrote ({e}): is another program using the same key prefix?"
        ))
    })?;
    Ok(Read {
        task: StoredTask {
            task: record.task,
            answers: record.answers,
            expires: record
                .expires_ms
                .map(|ms| UNIX_EPOCH + Duration::from_millis(ms)),
            owner: record.owner.map(Owner::from),
        },
        version: record.version,
        writes: record.writes,
        worker: record.worker,
    })
}

/// The milliseconds Redis keeps a task that expires at `expires`, for
/// `PX`: `None` without a TTL, at least 1 (Redis refuses 0; a task
/// already expired goes a millisecond later).
pub(crate) fn keep_ms(expires: Option<SystemTime>, now: SystemTime) -> Option<u64> {
    expires.map(|at| {
        let left = at.duration_since(now).unwrap_or(Duration::ZERO);
        u64::try_from(left.as_millis()).unwrap_or(u64::MAX).max(1)
    })
}

/// What a task's `statusMessage` says once its lease lapsed.
pub(crate) const WENT_AWAY: &str = "the server running this task went away (its lease lapsed without renewal): start the task again";

/// The lease rule: a task that has not finished and whose lease is gone is
/// `failed` now, with an error and a status message saying its server went
/// away. Returns whether it changed.
pub(crate) fn lapse(task: &mut StoredTask) -> bool {
    if task.task.task.status.is_terminal() {
        return false;
    }
    task.task.input_requests = None;
    task.answers.clear();
    task.task.error = Some(ErrorObject::internal_error(WENT_AWAY));
    set_status(
        &mut task.task,
        TaskStatus::Failed,
        Some(format!("Failed: {WENT_AWAY}")),
    );
    true
}

fn unix_ms(at: SystemTime) -> u64 {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{InputRequest, InputRequests, Task};
    use serde_json::json;

    fn task(status: TaskStatus, expires: Option<SystemTime>) -> StoredTask {
        StoredTask {
            task: DetailedTask::new(Task {
                task_id: "0123abcd".into(),
                status,
                status_message: Some("half way".into()),
                created_at: "2026-07-28T10:00:00.000Z".into(),
                last_updated_at: "2026-07-28T10:00:01.000Z".into(),
                ttl_ms: Some(60_000),
                poll_interval_ms: Some(200),
            }),
            answers: InputResponses::new(),
            expires,
            owner: None,
        }
    }

    #[test]
    fn a_task_round_trips_through_its_redis_value() {
        // Whole milliseconds: what the record keeps.
        let at = UNIX_EPOCH + Duration::from_millis(1_785_000_000_123);
        let mut original = task(TaskStatus::Completed, Some(at));
        original.task.result = Some(json!({ "content": [] }).as_object().unwrap().clone());
        let json = encode(&original).unwrap();
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert!(json.starts_with("{\"version\":1,"), "{json}");
        assert_eq!(value["expiresMs"], 1_785_000_000_123u64);
        assert_eq!(value["task"]["taskId"], "0123abcd");
        assert_eq!(value["task"]["status"], "completed");
        assert_eq!(decode_read(&json).unwrap().task, original);

        let forever = task(TaskStatus::Working, None);
        let json = encode(&forever).unwrap();
        assert!(json.contains("\"expiresMs\":null"), "{json}");
        assert_eq!(decode_read(&json).unwrap().task, forever);
    }

    #[test]
    fn the_owner_is_kept_through_every_write_and_an_old_record_has_none() {
        let mut owned = task(TaskStatus::Working, None);
        owned.owner = Some(Owner::client(None, "app"));
        let json = encode(&owned).unwrap();
        assert!(json.starts_with("{\"version\":1,"), "{json}");
        assert!(json.contains("\"owner\":{\"client\":\"app\"}"), "{json}");
        let read = decode_read(&json).unwrap();
        assert_eq!(read.task, owned);
        let json = encode_write(&read.task, &read, Writer::Update("w")).unwrap();
        assert_eq!(decode_read(&json).unwrap().task.owner, owned.owner);
        // A record of the version before: bound to nobody.
        let old = json.replace(",\"owner\":{\"client\":\"app\"}", "");
        assert!(!old.contains("owner"), "{old}");
        assert_eq!(decode_read(&old).unwrap().task.owner, None);
        // The version before reads a record with an owner: its `Record`
        // had no `owner` member and refused no unknown one.
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        #[allow(dead_code)] // Read only to show it parses.
        struct Before {
            version: u64,
            task: DetailedTask,
            expires_ms: Option<u64>,
        }
        let before: Before = serde_json::from_str(&json).unwrap();
        assert_eq!(before.version, 2);
    }

    /// An owner without an issuer is stored as before issuers (a replica
    /// of the version before reads it as it wrote it); one with an issuer
    /// in a form that version cannot read, never as the bare subject.
    #[test]
    fn an_owner_without_an_issuer_is_stored_as_before_and_one_with_an_issuer_apart() {
        let mut plain = task(TaskStatus::Working, None);
        plain.owner = Some(Owner::subject(None, "alice"));
        let json = encode(&plain).unwrap();
        assert!(json.contains("\"owner\":{\"subject\":\"alice\"}"), "{json}");
        assert_eq!(decode_read(&json).unwrap().task, plain);
        for owner in [
            Owner::subject(Some("https://a.example"), "alice"),
            Owner::client(Some("https://a.example"), "app"),
        ] {
            let mut issued = task(TaskStatus::Working, None);
            issued.owner = Some(owner);
            let json = encode(&issued).unwrap();
            assert!(json.contains("\"issuer\":\"https://a.example\""), "{json}");
            let read = decode_read(&json).unwrap();
            assert_eq!(read.task, issued);
            let json = encode_write(&read.task, &read, Writer::Update("w")).unwrap();
            assert_eq!(decode_read(&json).unwrap().task.owner, issued.owner);
            // The version before: its owner had these two forms only, and
            // the record does not parse (nothing taken for the bare name).
            #[derive(Deserialize)]
            #[serde(rename_all = "camelCase")]
            #[allow(dead_code)] // Read only to show it does not parse.
            enum OwnerBefore {
                Subject(String),
                Client(String),
            }
            #[derive(Deserialize)]
            #[allow(dead_code)]
            struct Before {
                owner: Option<OwnerBefore>,
            }
            assert!(serde_json::from_str::<Before>(&json).is_err(), "{json}");
        }
    }

    #[test]
    fn each_write_has_a_version_and_a_retry_finds_its_own_write() {
        let task = task(TaskStatus::Working, None);
        let mut read = decode_read(&encode(&task).unwrap()).unwrap();
        assert_eq!((read.version, read.writes.len()), (1, 0));
        for n in 0..20 {
            let id = format!("w{n}");
            let json = encode_write(&read.task, &read, Writer::Update(&id)).unwrap();
            read = decode_read(&json).unwrap();
            assert!(read.has_written(&id));
        }
        assert_eq!(read.version, 21);
        assert_eq!(read.writes.len(), WRITES_KEPT, "bounded");
        assert!(!read.has_written("w0"));
        assert!(read.has_written("w19"));
    }

    #[test]
    fn the_workers_write_id_outlives_any_number_of_plain_writes() {
        // review_b::a_question_answered_key_by_key_while_its_write_reply_was_late_is_not_failed:
        // nine answers after the worker's write pushed its id out.
        let task = task(TaskStatus::Working, None);
        let mut read = decode_read(&encode(&task).unwrap()).unwrap();
        let json = encode_write(&read.task, &read, Writer::Worker("asks")).unwrap();
        read = decode_read(&json).unwrap();
        for n in 0..3 * WRITES_KEPT {
            let id = format!("answer{n}");
            let json = encode_write(&read.task, &read, Writer::Update(&id)).unwrap();
            read = decode_read(&json).unwrap();
        }
        assert!(read.has_written("asks"));
        assert_eq!(read.writes.len(), WRITES_KEPT);
        // The worker's next step takes its place; the plain ids stay.
        let json = encode_write(&read.task, &read, Writer::Worker("ends")).unwrap();
        read = decode_read(&json).unwrap();
        assert!(read.has_written("ends"));
        assert!(!read.has_written("asks"));
        assert!(read.has_written(&format!("answer{}", 3 * WRITES_KEPT - 1)));
        assert_eq!(read.version, 2 + 3 * WRITES_KEPT as u64 + 1);
    }

    #[test]
    fn a_foreign_value_is_an_error_that_names_the_prefix() {
        let Err(err) = decode_read("{\"name\":\"not a task\"}") else {
            panic!("a foreign value decoded");
        };
        assert_eq!(err.code, -32603);
        assert!(err.message.contains("key prefix"), "{}", err.message);
    }

    #[test]
    fn redis_keeps_a_task_until_its_expiry_and_at_least_a_millisecond() {
        let now = SystemTime::now();
        assert_eq!(keep_ms(None, now), None);
        assert_eq!(
            keep_ms(Some(now + Duration::from_millis(1500)), now),
            Some(1500)
        );
        assert_eq!(keep_ms(Some(now - Duration::from_secs(1)), now), Some(1));
    }

    #[test]
    fn a_lapsed_lease_fails_an_unfinished_task_and_leaves_a_finished_one() {
        let mut waiting = task(TaskStatus::InputRequired, None);
        let mut asked = InputRequests::new();
        asked.insert("roots".into(), InputRequest::ListRoots(None));
        waiting.task.input_requests = Some(asked);
        assert!(lapse(&mut waiting));
        assert_eq!(waiting.task.task.status, TaskStatus::Failed);
        assert!(waiting.task.input_requests.is_none());
        let error = waiting.task.error.as_ref().unwrap();
        assert!(error.message.contains(WENT_AWAY), "{}", error.message);
        let message = waiting.task.task.status_message.clone().unwrap();
        assert!(message.contains("went away"), "{message}");
        assert!(waiting.task.task.last_updated_at.as_str() > "2026-07-28T10:00:01.000Z");

        let mut done = task(TaskStatus::Completed, None);
        let before = done.clone();
        assert!(!lapse(&mut done));
        assert_eq!(done, before);
    }
}

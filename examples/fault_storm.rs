//! The client side of `tests/scale_out_faults.sh`: a storm of task calls
//! on replicas behind a load balancer while the script breaks Redis and
//! the replicas, through this crate's HTTP client.
//!
//! ```text
//! fault_storm URL SECONDS THREADS
//! ```
//!
//! Each thread starts tasks of the everything example in turn, each with a
//! label of its own: `slow_compute` for 3 s (left to run), `slow_compute`
//! for 60 s (cancelled a second later with `tasks/cancel`), and
//! `confirm_delete` (its question answered with `tasks/update`). A call
//! or an answer that fails (Redis stalled, a replica gone) is tried
//! again. Each task is followed by a `subscriptions/listen` of its own
//! (on whichever replica it lands), until it hears the task end and 2 s
//! more. After `SECONDS`, every task started is polled until it ends, 20 s
//! at most (a lease, a sweep and time to spare), and read once more.
//! Prints one line per task, `ID LABEL KIND ACTED LISTEN FINAL_STATUS
//! TEXT` (ACTED: whether its cancel or answer was acknowledged; LISTEN:
//! what its listen heard, and how and when it ended, see [`follow`]), for
//! the script to hold against the handlers' own lines (`--task-log`) and
//! the time it killed a replica. Exit status 1 on a usage error only.

use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mcp_stdio::types::{
    DetailedTask, ElicitResult, InputResponse, InputResponses, SubscriptionFilter, TaskStatus,
};
use mcp_stdio::{
    Client, EraPolicy, Error, RequestOptions, Subscription, SubscriptionEnd, SubscriptionEvent,
    TaskHandle, ToolCallStart,
};
use serde_json::{Map, json};

/// What became of one task.
struct Record {
    id: String,
    label: String,
    kind: &'static str,
    acted: bool,
    /// What the task's listen heard ([`follow`]).
    listen: thread::JoinHandle<String>,
}

/// How long a listen waits for its task to end, past the storm: the
/// final polls' 20 s, and a little more.
const FOLLOW_PAST_THE_STORM: Duration = Duration::from_secs(22);

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(url), Some(seconds), Some(threads)) = (
        args.first().cloned(),
        args.get(1).and_then(|s| s.parse::<u64>().ok()),
        args.get(2).and_then(|s| s.parse::<usize>().ok()),
    ) else {
        eprintln!("fault_storm: usage: fault_storm URL SECONDS THREADS");
        std::process::exit(1);
    };
    let until = Instant::now() + Duration::from_secs(seconds);
    let records = Arc::new(Mutex::new(Vec::new()));
    let workers: Vec<_> = (0..threads)
        .map(|n| {
            let (url, records) = (url.clone(), Arc::clone(&records));
            thread::spawn(move || storm(&url, n, until, &records))
        })
        .collect();
    // Each thread's client, kept open until its listens are read: closing
    // it would end them.
    let _clients: Vec<Client> = workers.into_iter().filter_map(|w| w.join().ok()).collect();
    let client = connect(&url);
    let records = std::mem::take(&mut *records.lock().unwrap());
    let deadline = Instant::now() + Duration::from_secs(20);
    for record in records {
        let handle = client.task(record.id.clone());
        let end = settle(&handle, deadline);
        // Read once more: a terminal state is final.
        let again = retry(deadline + Duration::from_secs(5), || handle.get());
        let (status, text) = match (&end, &again) {
            (Some(end), Some(again)) if end.task.status != again.task.status => (
                format!("changed:{:?}->{:?}", end.task.status, again.task.status),
                String::new(),
            ),
            (Some(end), _) => (status_name(end.task.status), summary(end)),
            (None, _) => ("unread".to_owned(), String::new()),
        };
        let listen = record.listen.join().unwrap_or_else(|_| "panicked".into());
        println!(
            "{} {} {} {} {} {} {}",
            record.id, record.label, record.kind, record.acted, listen, status, text
        );
    }
}

fn connect(url: &str) -> Client {
    let mut delay = Duration::from_millis(100);
    loop {
        let client = Client::builder()
            .era(EraPolicy::ModernOnly)
            .tasks(true)
            // Declares elicitation (`confirm_delete` requires it); the
            // storm answers its question itself, with `tasks/update`.
            .on_elicitation(|_| {
                let mut content = Map::new();
                content.insert("confirm".into(), json!(true));
                Ok(ElicitResult::accept(content))
            })
            .request_timeout(Duration::from_secs(30))
            .connect_url(url);
        match client {
            Ok(client) => return client,
            Err(e) => {
                eprintln!("fault_storm: connect: {e}");
                thread::sleep(delay);
                delay = (delay * 2).min(Duration::from_secs(2));
            }
        }
    }
}

/// One thread's calls until `until`; its client, which its tasks' listens
/// need open.
fn storm(url: &str, n: usize, until: Instant, records: &Mutex<Vec<Record>>) -> Client {
    let client = connect(url);
    let mut i = 0;
    while Instant::now() < until {
        i += 1;
        let label = format!("t{n}-{i}");
        let kind = ["run", "cancel", "answer"][i % 3];
        let (tool, args) = match kind {
            "run" => ("slow_compute", json!({ "seconds": 3, "label": label })),
            "cancel" => ("slow_compute", json!({ "seconds": 60, "label": label })),
            _ => ("confirm_delete", json!({ "filename": label })),
        };
        let started = client.start_tool_call(tool, args, RequestOptions::new());
        let mut handle = match started {
            Ok(ToolCallStart::Task(handle)) => handle,
            Ok(ToolCallStart::Immediate(_)) => continue,
            // Not started (or not known to be): nothing to follow.
            Err(e) => {
                eprintln!("fault_storm: {label}: start: {e}");
                thread::sleep(Duration::from_millis(200));
                continue;
            }
        };
        let id = handle.id().to_owned();
        let listen = follow(&client, &handle, until + FOLLOW_PAST_THE_STORM);
        let deadline = Instant::now() + Duration::from_secs(30);
        let acted = match kind {
            "cancel" => {
                thread::sleep(Duration::from_secs(1));
                retry(deadline, || handle.cancel()).is_some()
            }
            "answer" => answer(&mut handle, deadline),
            _ => true,
        };
        records.lock().unwrap().push(Record {
            id,
            label,
            kind,
            acted,
            listen,
        });
    }
    client
}

/// Opens a listen that follows the task, and a thread that reads it until
/// it hears the task end and 2 s more, or `until`. The thread says what it
/// heard, each status in the order heard (`STATUSES`, `+` between them,
/// empty when none):
///
/// - `heard:STATUSES`: a terminal status among them (anything after it is
///   a task that went back);
/// - `nothing:STATUSES`: no end heard by `until`;
/// - `cut:END@MS:STATUSES`: the stream ended before the task's end was
///   heard, how (`disconnected`: the connection dropped, as when its
///   replica is killed; `closed`: the server ended it; `overflowed`: this
///   client did) and when (Unix time in milliseconds);
/// - `before`: the task had ended when the listen was acknowledged, so
///   nothing is to be heard;
/// - `none`: the listen could not be opened (its request failed), and
///   `refused`: it was, but without the task (the replica could not read
///   it).
fn follow(client: &Client, handle: &TaskHandle, until: Instant) -> thread::JoinHandle<String> {
    let filter = SubscriptionFilter {
        task_ids: Some(vec![handle.id().to_owned()]),
        ..SubscriptionFilter::default()
    };
    let opened = client.listen(filter);
    let refused = opened
        .as_ref()
        .is_ok_and(|listen| listen.not_accepted().task_ids.is_some());
    let ended = opened.is_ok()
        && !refused
        && handle
            .get()
            .is_ok_and(|task| task.task.status.is_terminal());
    thread::spawn(move || match opened {
        Err(_) => "none".to_owned(),
        Ok(_) if refused => "refused".to_owned(),
        Ok(_) if ended => "before".to_owned(),
        Ok(listen) => hear(listen, until),
    })
}

/// What a listen following one task hears (see [`follow`]).
fn hear(mut listen: Subscription, until: Instant) -> String {
    let mut heard: Vec<String> = Vec::new();
    let mut after_the_end = None;
    loop {
        let stop = after_the_end.unwrap_or(until);
        let left = stop.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        match listen.recv_timeout(left) {
            Ok(Some(SubscriptionEvent::TaskStatus(task))) => {
                heard.push(status_name(task.task.status));
                if after_the_end.is_none() && task.task.status.is_terminal() {
                    after_the_end = Some(Instant::now() + Duration::from_secs(2));
                }
            }
            Ok(_) => {}
            Err(end) if after_the_end.is_none() => {
                let end = match end {
                    SubscriptionEnd::Closed => "closed",
                    SubscriptionEnd::Overflowed => "overflowed",
                    SubscriptionEnd::Disconnected => "disconnected",
                    _ => "other",
                };
                let at = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_millis();
                return format!("cut:{end}@{at}:{}", heard.join("+"));
            }
            Err(_) => break,
        }
    }
    listen.cancel();
    let what = if after_the_end.is_some() {
        "heard"
    } else {
        "nothing"
    };
    format!("{what}:{}", heard.join("+"))
}

/// Waits for the task's question and answers it (yes); whether the answer
/// was acknowledged.
fn answer(handle: &mut TaskHandle, deadline: Instant) -> bool {
    while Instant::now() < deadline {
        let Some(task) = retry(deadline, || handle.get()) else {
            return false;
        };
        match task.task.status {
            TaskStatus::InputRequired => {
                let mut content = Map::new();
                content.insert("confirm".into(), json!(true));
                let reply = serde_json::to_value(ElicitResult::accept(content)).unwrap();
                let answers = InputResponses::from([("confirm".to_owned(), InputResponse(reply))]);
                return retry(deadline, || handle.update(answers.clone())).is_some();
            }
            TaskStatus::Working => thread::sleep(Duration::from_millis(100)),
            _ => return false,
        }
    }
    false
}

/// The task once it ended, polled until `deadline`.
fn settle(handle: &TaskHandle, deadline: Instant) -> Option<DetailedTask> {
    loop {
        let task = retry(deadline, || handle.get());
        match task {
            Some(task) if task.task.status.is_terminal() => return Some(task),
            Some(task) if Instant::now() >= deadline => return Some(task),
            None => return None,
            Some(_) => thread::sleep(Duration::from_millis(200)),
        }
    }
}

/// `call` until it succeeds or `deadline` passes (a replica stalled or
/// gone, Redis restarting: the next try may land elsewhere).
fn retry<T>(deadline: Instant, mut call: impl FnMut() -> Result<T, Error>) -> Option<T> {
    loop {
        match call() {
            Ok(value) => return Some(value),
            Err(_) if Instant::now() < deadline => thread::sleep(Duration::from_millis(200)),
            Err(e) => {
                eprintln!("fault_storm: gave up: {e}");
                return None;
            }
        }
    }
}

fn status_name(status: TaskStatus) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{status:?}"))
}

/// The result's text, or the error's message, on one line.
fn summary(task: &DetailedTask) -> String {
    let text = if let Some(result) = &task.result {
        result
            .get("content")
            .and_then(|c| c.get(0))
            .and_then(|c| c.get("text"))
            .and_then(|t| t.as_str())
            .unwrap_or_default()
            .to_owned()
    } else if let Some(error) = &task.error {
        error.message.clone()
    } else {
        String::new()
    };
    text.replace(['\n', '\r'], " ")
}

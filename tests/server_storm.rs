//! The server under storm: seeded rounds of pipelined pooled and inline
//! calls over real pipes, cancellations at random moments (before a request
//! begins, while it runs, right after its reply), ids reused right after
//! their reply, listens opened and cancelled while pool threads and helper
//! threads publish, progress from cancelled handlers, tasks, lines a fault
//! injector would write (not JSON, batches, wrong members, wrong arguments,
//! blank lines, CRLF, stray responses and notifications), and the end of
//! input with everything in flight. One round in three is a legacy
//! (2025-11-25) session (feature `legacy`): no listens or tasks, but calls
//! that ask the client for input (`elicitation/create`), answered at random
//! moments or left open while their request is cancelled (the server must
//! then withdraw the ask, and never ask for a request whose cancellation it
//! read). Every line the server writes is judged by an exact oracle
//! ([`Model`]): the rules of ARCHITECTURE.md ("Each rule in one function"),
//! each one a check below.
//!
//! Bounded: `STORM_SECONDS` (default 6) of rounds, each a new connection to
//! the same server; `STORM_SEED` replays a run's choices (thread timing
//! differs). CI runs it on one CPU (`taskset -c 0`) and on two.
//!
//! The barrier: a cancellation takes effect when the server reads it, which
//! the client cannot see. So each cancellation is followed (at once or a
//! few lines later) by an inline call; the server acts on lines in order
//! and writes lines in the order it decided them, so once that call's
//! reply is in, nothing more may come for what was cancelled before it.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use mcp_stdio::types::{
    CallToolResult, ElicitRequestFormParams, ElicitRequestParams, InputRequest,
    InputRequiredResult, ReadResourceResult, ResourceContents, ResourceTemplate, Tool,
};
use mcp_stdio::{MemoryTaskStore, Outcome, Server, TaskMode, Transport};
use serde::Deserialize;
use serde_json::{Value, json};

/// A request id as the model keys it: its JSON text (`7`, `"b9"`).
type Id = String;

/// How long the server may stay silent while the model waits for it.
const WAIT: Duration = Duration::from_secs(10);
/// The URIs that tools publish and listens subscribe to.
const URIS: usize = 8;
/// At most this many requests in flight at once.
const DEPTH: usize = 64;
const TASKS_EXT: &str = "io.modelcontextprotocol/tasks";
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

#[test]
fn the_server_keeps_every_rule_under_storm() {
    let seed = std::env::var("STORM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    let seconds: f64 = std::env::var("STORM_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(6.0);
    let mut rng = Rng(seed | 1);
    let max_running = [1, 2, 4, 16][rng.below(4)];
    let queue_limit = [1, 4, 64][rng.below(3)];
    // No grace: requests in flight at the end of input are cut off.
    let grace = [0, 2, 1000][rng.below(3)];
    eprintln!(
        "storm: seed {seed}, max_running {max_running}, queue_limit {queue_limit}, grace {grace} ms"
    );
    let server = storm_server(max_running, queue_limit, Duration::from_millis(grace));

    let mut tally = Tally::default();
    let mut tasks: HashMap<String, String> = HashMap::new();
    let until = Instant::now() + Duration::from_secs_f64(seconds);
    while Instant::now() < until {
        let legacy = rng.below(3) == 0 && cfg!(feature = "legacy");
        let session = Session {
            legacy,
            max_running,
        };
        let mut model = Model::start(&server, rng.next(), std::mem::take(&mut tasks), session);
        model.storm(Duration::from_millis(100 + rng.below(400) as u64));
        let model = model.end_of_input();
        tasks = model.tasks;
        tally.add(&model.tally);
    }
    // The tasks of every round end completed, with their own result.
    let deadline = Instant::now() + WAIT;
    while !tasks.is_empty() {
        assert!(
            Instant::now() < deadline,
            "tasks never completed: {tasks:?}"
        );
        let session = Session {
            legacy: false,
            max_running,
        };
        let mut model = Model::start(&server, rng.next(), std::mem::take(&mut tasks), session);
        model.poll_tasks();
        model.settle();
        let model = model.end_of_input();
        tasks = model.tasks;
        tally.add(&model.tally);
        thread::sleep(Duration::from_millis(20));
    }
    eprintln!("storm: {tally:?}");
    assert!(tally.replies > 1000, "too little happened: {tally:?}");
}

// --- The server --------------------------------------------------------

#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
struct Args {
    token: String,
    #[serde(default)]
    micros: u64,
    #[serde(default)]
    progress: u32,
    /// A URI to publish `resources/updated` for, before the reply.
    #[serde(default)]
    publish: Option<String>,
    /// Publish from a helper thread rather than the handler's own.
    #[serde(default)]
    helper: bool,
}

fn storm_server(max_running: usize, queue_limit: usize, grace: Duration) -> Server {
    Server::builder("storm", "1.0.0")
        .max_running(max_running)
        .queue_limit(queue_limit)
        .shutdown_grace(grace)
        // No task is dropped before the model polls it: a full store drops
        // the oldest finished task, which the model may not have seen yet
        // (a legacy round polls none).
        .task_store(MemoryTaskStore::new(1 << 20))
        .inline_tool(Tool::new("echo", "Echoes a token."), |_ctx, args: Args| {
            Ok(CallToolResult::text(args.token))
        })
        .tool(
            Tool::new("work", "Works a while, with progress, maybe publishing."),
            |ctx, args: Args| {
                for n in 1..=args.progress {
                    ctx.progress(f64::from(n), None, None);
                    thread::sleep(Duration::from_micros(
                        args.micros / u64::from(args.progress),
                    ));
                }
                if args.progress == 0 && args.micros > 0 {
                    thread::sleep(Duration::from_micros(args.micros));
                }
                if let Some(uri) = &args.publish {
                    let notifier = ctx.notifier();
                    if args.helper {
                        thread::scope(|s| {
                            s.spawn(|| notifier.resource_updated(uri));
                        });
                    } else {
                        notifier.resource_updated(uri);
                    }
                }
                Ok(CallToolResult::text(args.token))
            },
        )
        .tool(
            Tool::new(
                "ask",
                "Asks the client for a word, then answers token:word.",
            ),
            |ctx, args: Args| {
                Ok(match ctx.elicitation("word") {
                    Some(answer) => {
                        let content = answer.content.unwrap_or_default();
                        let word = content.get("word").and_then(Value::as_str).unwrap_or("");
                        Outcome::Complete(CallToolResult::text(format!("{}:{word}", args.token)))
                    }
                    None => {
                        // The token as the message: the model tells whose ask it is.
                        let schema = serde_json::from_value(json!({ "type": "object",
                            "properties": { "word": { "type": "string" } } }))
                        .expect("a form schema");
                        let form = ElicitRequestFormParams::new(&args.token, schema);
                        let ask = InputRequest::Elicit(ElicitRequestParams::Form(form));
                        Outcome::InputRequired(InputRequiredResult::new(
                            [("word".to_owned(), ask)].into_iter().collect(),
                        ))
                    }
                })
            },
        )
        .task_tool(
            Tool::new("task", "Echoes a token as a task."),
            TaskMode::Required,
            |_ctx, args: Args| {
                thread::sleep(Duration::from_micros(args.micros));
                Ok(CallToolResult::text(args.token))
            },
        )
        .resource_template(
            ResourceTemplate::new("storm://{n}", "storm"),
            |_ctx, req| {
                Ok(ReadResourceResult::new(vec![ResourceContents::text(
                    req.uri.clone(),
                    "storm",
                )]))
            },
        )
        .build()
}

// --- The oracle --------------------------------------------------------

/// What was seen, over all rounds.
#[derive(Debug, Default)]
struct Tally {
    lines: u64,
    replies: u64,
    cancels: u64,
    replied_despite_cancel: u64,
    shut_down_replies: u64,
    progress: u64,
    published: u64,
    listens: u64,
    tasks_done: u64,
    ids_reused: u64,
    junk: u64,
    legacy_rounds: u64,
    asks: u64,
    asks_answered: u64,
    asks_withdrawn: u64,
    asks_refused: u64,
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.lines += o.lines;
        self.replies += o.replies;
        self.cancels += o.cancels;
        self.replied_despite_cancel += o.replied_despite_cancel;
        self.shut_down_replies += o.shut_down_replies;
        self.progress += o.progress;
        self.published += o.published;
        self.listens += o.listens;
        self.tasks_done += o.tasks_done;
        self.ids_reused += o.ids_reused;
        self.junk += o.junk;
        self.legacy_rounds += o.legacy_rounds;
        self.asks += o.asks;
        self.asks_answered += o.asks_answered;
        self.asks_withdrawn += o.asks_withdrawn;
        self.asks_refused += o.asks_refused;
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    /// A call that echoes `token`: inline, pooled, or a barrier.
    Call,
    /// A task-augmented call: its reply creates a task.
    Task,
    /// `tasks/get` for a task.
    TaskGet(String),
    /// A call whose arguments do not fit its tool: a result with `isError`.
    WrongArguments,
    /// A line the server must refuse at once with this error code.
    Refused(i64),
    /// A call that asks a legacy client for a word: `token:w` once answered.
    Ask,
}

/// What a round's connection is: its era, and the server's `max_running`.
struct Session {
    legacy: bool,
    max_running: usize,
}

/// One of the server's asks to a legacy client, by the ask's id.
#[derive(Debug)]
struct Ask {
    /// The call that asked.
    call: Id,
    /// Answered by the model (the server may not have read it yet).
    answered: bool,
}

/// A request in flight.
#[derive(Debug)]
struct Req {
    kind: Kind,
    token: String,
    progress: Option<String>,
    last_progress: f64,
    /// Cancelled by the client (the reply may still come until a barrier).
    cancelled: bool,
    /// The URI it publishes, and the listens that must hear of it.
    publish: Option<(String, HashSet<String>)>,
    /// Ids whose cancellation this barrier proves.
    proves: Vec<Id>,
    /// A barrier: how many errors without an id (for lines that were no
    /// request) are due before its reply.
    nulls_before: Option<usize>,
    /// A call of `ask`: the most requests seen waiting for answers (asked,
    /// no reply yet) at once since it was sent.
    peak_waiting: usize,
}

/// An open subscription.
#[derive(Debug)]
struct Listen {
    uris: HashSet<String>,
    acked: bool,
    cancelled: bool,
}

/// The client's side of one connection, and the oracle.
struct Model {
    rng: Rng,
    input: Option<std::io::PipeWriter>,
    lines: Receiver<String>,
    serving: Option<thread::JoinHandle<Result<(), mcp_stdio::Error>>>,
    /// Requests in flight by id.
    open: HashMap<Id, Req>,
    /// Ids cancelled, and proven so by a barrier: nothing may carry them.
    dead: HashSet<Id>,
    /// Progress tokens of requests cancelled and proven so, or answered.
    dead_progress: HashSet<String>,
    /// Progress tokens in flight, to their request.
    progress_of: HashMap<String, Id>,
    /// Cancelled requests and listens no barrier has proven yet.
    unproven: Vec<Id>,
    listens: HashMap<Id, Listen>,
    /// URIs a call in flight publishes, to that call.
    busy: HashMap<String, Id>,
    /// This round's URIs are `storm://ROUND.N`: a handler of an earlier
    /// round that the end of its input cut off (answered `-32603`) may
    /// still run and publish, and what it publishes reaches every
    /// connection of the server, this round's listens too (found by CI on
    /// one CPU: read as a second delivery of this round's publish).
    round: u64,
    /// Listens heard of per publishing call.
    heard: HashMap<Id, HashSet<Id>>,
    /// Ids free to reuse right now.
    reusable: Vec<Id>,
    /// Tasks created and not seen completed: id to token.
    tasks: HashMap<String, String>,
    /// Tasks being polled right now.
    polling: HashSet<String>,
    /// The codes of the errors without an id still due, in order: one for
    /// each line that was no request (not JSON, a batch, a scalar).
    nulls_due: VecDeque<i64>,
    /// Errors without an id due so far, and seen so far.
    nulls_sent: usize,
    nulls_seen: usize,
    /// A legacy session: no listens or tasks; calls may ask for input.
    legacy: bool,
    /// The server's `max_running`: as many requests may wait for answers.
    max_running: usize,
    /// The server's asks seen, by their id (JSON text).
    asks: HashMap<Id, Ask>,
    /// Calls of the `ask` tool in flight, by their token.
    asking: HashMap<String, Id>,
    closing: bool,
    tally: Tally,
}

static NEXT: AtomicU64 = AtomicU64::new(1);

fn fresh() -> u64 {
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl Model {
    fn start(
        server: &Server,
        seed: u64,
        tasks: HashMap<String, String>,
        session: Session,
    ) -> Model {
        let (their_in, our_out) = std::io::pipe().expect("a pipe");
        let (our_in, their_out) = std::io::pipe().expect("a pipe");
        let transport = Transport::new(BufReader::new(their_in), their_out);
        let serving = {
            let server = server.clone();
            thread::spawn(move || server.serve(transport))
        };
        let (tx, lines) = crossbeam_channel::unbounded();
        thread::spawn(move || {
            let mut reader = BufReader::new(our_in);
            let mut line = String::new();
            loop {
                line.clear();
                match reader.read_line(&mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        assert!(line.ends_with('\n'), "a line without its newline: {line:?}");
                        if tx.send(line.trim_end_matches('\n').to_owned()).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        let mut model = Model {
            rng: Rng(seed | 1),
            input: Some(our_out),
            lines,
            serving: Some(serving),
            open: HashMap::new(),
            dead: HashSet::new(),
            dead_progress: HashSet::new(),
            progress_of: HashMap::new(),
            unproven: Vec::new(),
            listens: HashMap::new(),
            busy: HashMap::new(),
            round: fresh(),
            heard: HashMap::new(),
            reusable: Vec::new(),
            tasks,
            polling: HashSet::new(),
            nulls_due: VecDeque::new(),
            nulls_sent: 0,
            nulls_seen: 0,
            legacy: session.legacy,
            max_running: session.max_running,
            asks: HashMap::new(),
            asking: HashMap::new(),
            closing: false,
            tally: Tally::default(),
        };
        if session.legacy {
            model.open_session();
        }
        model
    }

    /// One of this round's URIs, at random.
    fn uri(&mut self) -> String {
        format!("storm://{}.{}", self.round, self.rng.below(URIS))
    }

    /// `initialize` (declaring elicitation) and `notifications/initialized`.
    fn open_session(&mut self) {
        self.tally.legacy_rounds += 1;
        let mut out = Vec::new();
        let initialize = json!({ "jsonrpc": "2.0", "id": "init", "method": "initialize",
            "params": { "protocolVersion": "2025-11-25", "capabilities": { "elicitation": {} },
                "clientInfo": { "name": "storm", "version": "1" } } });
        write_line(&mut out, &initialize);
        self.send(&out);
        let line = (self.lines.recv_timeout(WAIT)).expect("an answer to initialize");
        let answer: Value = serde_json::from_str(&line).expect("JSON");
        assert_eq!(answer["id"], "init", "{line}");
        assert_eq!(answer["result"]["protocolVersion"], "2025-11-25", "{line}");
        let mut out = Vec::new();
        write_line(
            &mut out,
            &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
        );
        self.send(&out);
    }

    /// Random steps for `length`, then a final burst and a barrier.
    fn storm(&mut self, length: Duration) {
        let until = Instant::now() + length;
        if !self.legacy {
            self.poll_tasks();
        }
        while Instant::now() < until {
            let burst = 1 + self.rng.below(8);
            let mut out = Vec::new();
            for _ in 0..burst {
                self.step(&mut out);
            }
            self.send(&out);
            self.take_lines(false);
            while self.open.len() >= DEPTH {
                self.prove_cancellations();
                self.answer_asks(usize::MAX);
                self.take_lines(true);
            }
        }
        let mut out = Vec::new();
        for _ in 0..self.rng.below(DEPTH / 2) {
            self.call(&mut out);
        }
        self.send(&out);
    }

    /// One random action, written to `out`.
    fn step(&mut self, out: &mut Vec<u8>) {
        if self.legacy {
            return self.legacy_step(out);
        }
        match self.rng.below(100) {
            0..=54 => self.call(out),
            55..=59 => self.task(out),
            60..=69 => self.cancel_one(out),
            70..=74 => {
                // A cancellation right behind its request: it may take
                // effect before the request begins.
                self.call(out);
                self.cancel_one(out);
            }
            75..=81 => self.barrier(out),
            82..=84 => self.junk(out),
            85..=89 => self.listen(out),
            90..=92 => self.cancel_listen(out),
            _ => {
                // A cancellation of something already answered (or never
                // sent): ignored, and it must not touch the id's next use.
                let id = self.reusable.last().cloned().unwrap_or_else(|| "-1".into());
                write_line(out, &cancel(&id));
                if self.rng.below(2) == 0 {
                    self.call(out);
                }
            }
        }
    }

    /// One random action of a legacy session (no listens, no tasks).
    fn legacy_step(&mut self, out: &mut Vec<u8>) {
        match self.rng.below(100) {
            0..=44 => self.call(out),
            45..=59 => self.ask(out),
            60..=69 => self.cancel_one(out),
            70..=74 => {
                self.ask(out);
                self.cancel_one(out);
            }
            75..=81 => self.barrier(out),
            82..=84 => self.junk(out),
            _ => {
                let n = 1 + self.rng.below(3);
                self.answer_asks_into(out, n);
            }
        }
    }

    /// A call of `ask`: it asks for a word, then answers `token:word`.
    fn ask(&mut self, out: &mut Vec<u8>) {
        let id = self.next_id();
        let token = format!("t{}", fresh());
        let params = json!({ "name": "ask", "arguments": { "token": token } });
        write_line(out, &request(&id, "tools/call", params));
        self.asking.insert(token.clone(), id.clone());
        self.insert(id.clone(), Kind::Ask, token, None, None);
        let waiting = self.waiting();
        self.open.get_mut(&id).expect("just sent").peak_waiting = waiting;
    }

    /// How many requests wait for answers, as far as the model knows: they
    /// asked, and their reply has not come.
    fn waiting(&self) -> usize {
        (self.asks.values())
            .filter(|a| self.open.contains_key(&a.call))
            .count()
    }

    /// Answers up to `n` of the asks not answered yet, oldest first.
    fn answer_asks(&mut self, n: usize) {
        let mut out = Vec::new();
        self.answer_asks_into(&mut out, n);
        self.send(&out);
    }

    fn answer_asks_into(&mut self, out: &mut Vec<u8>, n: usize) {
        let mut open: Vec<&Id> = (self.asks.iter())
            .filter(|(_, a)| !a.answered)
            .map(|(id, _)| id)
            .collect();
        open.sort();
        let chosen: Vec<Id> = open.into_iter().take(n).cloned().collect();
        for id in chosen {
            self.asks.get_mut(&id).expect("seen").answered = true;
            self.tally.asks_answered += 1;
            let answer = json!({ "jsonrpc": "2.0", "id": id_value(&id),
                "result": { "action": "accept", "content": { "word": "w" } } });
            write_line(out, &answer);
        }
    }

    fn next_id(&mut self) -> Id {
        if !self.reusable.is_empty() && self.rng.below(3) == 0 {
            let i = self.rng.below(self.reusable.len());
            self.tally.ids_reused += 1;
            return self.reusable.swap_remove(i);
        }
        fresh().to_string()
    }

    /// A call of `echo` (inline) or `work` (pooled).
    fn call(&mut self, out: &mut Vec<u8>) {
        let id = self.next_id();
        let token = format!("t{}", fresh());
        let pooled = self.rng.below(3) != 0;
        let mut args = json!({ "token": token });
        let mut progress = None;
        let mut publish = None;
        if pooled {
            args["micros"] = json!(self.rng.below(3) as u64 * self.rng.below(300) as u64);
            if self.rng.below(2) == 0 {
                args["progress"] = json!(1 + self.rng.below(3));
                progress = Some(format!("p{}", fresh()));
            }
            let uri = self.uri();
            if self.rng.below(4) == 0 && !self.busy.contains_key(&uri) {
                args["publish"] = json!(uri);
                args["helper"] = json!(self.rng.below(2) == 0);
                // Every listen acknowledged by now that asked for the URI
                // hears of it before the reply.
                let hearers = self
                    .listens
                    .iter()
                    .filter(|(_, l)| l.acked && !l.cancelled && l.uris.contains(&uri))
                    .map(|(id, _)| id.clone())
                    .collect();
                self.busy.insert(uri.clone(), id.clone());
                self.heard.insert(id.clone(), HashSet::new());
                publish = Some((uri, hearers));
            }
        }
        let name = if pooled { "work" } else { "echo" };
        let mut req = request(
            &id,
            "tools/call",
            json!({ "name": name, "arguments": args }),
        );
        if let Some(p) = &progress {
            req["params"]["_meta"]["progressToken"] = json!(p);
            self.progress_of.insert(p.clone(), id.clone());
        }
        write_line(out, &req);
        if self.rng.below(8) == 0 {
            // A CRLF line end: the same call.
            out.pop();
            out.extend(b"\r\n");
        }
        self.insert(id, Kind::Call, token, progress, publish);
    }

    fn insert(
        &mut self,
        id: Id,
        kind: Kind,
        token: String,
        progress: Option<String>,
        publish: Option<(String, HashSet<String>)>,
    ) {
        self.dead.remove(&id);
        let old = self.open.insert(
            id.clone(),
            Req {
                kind,
                token,
                progress,
                last_progress: 0.0,
                cancelled: false,
                publish,
                proves: Vec::new(),
                nulls_before: None,
                peak_waiting: 0,
            },
        );
        assert!(old.is_none(), "the model reused id {id} while in flight");
    }

    /// A task-augmented call.
    fn task(&mut self, out: &mut Vec<u8>) {
        let id = self.next_id();
        let token = format!("t{}", fresh());
        let args = json!({ "token": token, "micros": self.rng.below(2000) });
        let mut req = request(
            &id,
            "tools/call",
            json!({ "name": "task", "arguments": args }),
        );
        req["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
            json!({ "extensions": { TASKS_EXT: {} } });
        write_line(out, &req);
        self.insert(id, Kind::Task, token, None, None);
    }

    /// `tasks/get` for every task not being polled.
    fn poll_tasks(&mut self) {
        let mut out = Vec::new();
        let ids: Vec<String> = self
            .tasks
            .keys()
            .filter(|t| !self.polling.contains(*t))
            .cloned()
            .collect();
        for task in ids {
            let id = fresh().to_string();
            let mut req = request(&id, "tasks/get", json!({ "taskId": task }));
            req["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
                json!({ "extensions": { TASKS_EXT: {} } });
            write_line(&mut out, &req);
            self.polling.insert(task.clone());
            self.insert(id, Kind::TaskGet(task), String::new(), None, None);
        }
        self.send(&out);
    }

    /// Cancels a random request in flight (not a publishing one: what it
    /// publishes is checked exactly, and not a barrier).
    fn cancel_one(&mut self, out: &mut Vec<u8>) {
        let candidates: Vec<Id> = self
            .open
            .iter()
            .filter(|(_, r)| {
                !r.cancelled
                    && r.publish.is_none()
                    && r.proves.is_empty()
                    && matches!(r.kind, Kind::Call | Kind::Ask)
            })
            .map(|(id, _)| id.clone())
            .collect();
        if candidates.is_empty() {
            return;
        }
        let id = candidates[self.rng.below(candidates.len())].clone();
        self.open.get_mut(&id).expect("in flight").cancelled = true;
        self.unproven.push(id.clone());
        self.tally.cancels += 1;
        write_line(out, &cancel(&id));
    }

    /// An inline call that proves every cancellation sent before it.
    fn barrier(&mut self, out: &mut Vec<u8>) {
        let id = format!("\"b{}\"", fresh());
        let token = format!("t{}", fresh());
        write_line(
            out,
            &request(
                &id,
                "tools/call",
                json!({ "name": "echo", "arguments": { "token": token } }),
            ),
        );
        self.insert(id.clone(), Kind::Call, token, None, None);
        let proves = std::mem::take(&mut self.unproven);
        let barrier = self.open.get_mut(&id).expect("just sent");
        barrier.proves = proves;
        barrier.nulls_before = Some(self.nulls_sent);
    }

    /// A line a fault injector would write, and what the server owes it:
    /// an error at once (with the line's id, or without one for a line
    /// that is no request), a result with `isError`, or nothing at all.
    fn junk(&mut self, out: &mut Vec<u8>) {
        self.tally.junk += 1;
        let id = format!("\"e{}\"", fresh());
        match self.rng.below(12) {
            0 => {
                // Cut anywhere: an object that never closes.
                let mut line = Vec::new();
                write_line(&mut line, &request(&id, "tools/list", json!({})));
                line.truncate(1 + self.rng.below(line.len() - 2));
                out.extend(line.iter().filter(|b| **b != b'\n'));
                out.push(b'\n');
                self.null_error(-32700);
            }
            1 => {
                out.extend(b"not json at all\n");
                self.null_error(-32700);
            }
            2 => {
                // A batch: refused whole, and none of its requests runs.
                let call = request(&id, "tools/call", json!({ "name": "echo" }));
                write_line(out, &json!([call, call]));
                self.null_error(-32600);
            }
            3 => {
                write_line(out, &json!(42));
                self.null_error(-32600);
            }
            4 => {
                write_line(out, &request(&id, "tools/frobnicate", json!({})));
                self.insert(id, Kind::Refused(-32601), String::new(), None, None);
            }
            5 => {
                let mut line = request(&id, "tools/list", json!({}));
                line["params"] = json!([1, 2]);
                write_line(out, &line);
                self.insert(id, Kind::Refused(-32600), String::new(), None, None);
            }
            6 => {
                let mut line = request(&id, "tools/list", json!({}));
                line["jsonrpc"] = json!("1.0");
                write_line(out, &line);
                self.insert(id, Kind::Refused(-32600), String::new(), None, None);
            }
            7 => {
                // Arguments of the wrong type, inline or pooled: a tool
                // result the model can act on, not a protocol error.
                let name = ["echo", "work"][self.rng.below(2)];
                let args = json!({ "token": 5 });
                write_line(
                    out,
                    &request(
                        &id,
                        "tools/call",
                        json!({ "name": name, "arguments": args }),
                    ),
                );
                self.insert(id, Kind::WrongArguments, String::new(), None, None);
            }
            8 => out.extend(
                [&b""[..], b"   ", b"\r", b"\t"][self.rng.below(4)]
                    .iter()
                    .chain(b"\n"),
            ),
            9 => write_line(
                out,
                &json!({ "jsonrpc": "2.0", "method": "notifications/frobnicated" }),
            ),
            10 => write_line(
                out,
                &json!({ "jsonrpc": "2.0", "id": id_value(&id), "result": {} }),
            ),
            _ => {
                let bad = [json!(1.5), Value::Null, json!([1]), json!({ "a": 1 })];
                let bad = bad[self.rng.below(bad.len())].clone();
                write_line(
                    out,
                    &json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": bad } }),
                );
            }
        }
    }

    /// A line that was no request: an error without an id is due.
    fn null_error(&mut self, code: i64) {
        self.nulls_due.push_back(code);
        self.nulls_sent += 1;
    }

    fn listen(&mut self, out: &mut Vec<u8>) {
        if self.listens.len() >= 16 {
            return;
        }
        let id = format!("\"L{}\"", fresh());
        let n = 1 + self.rng.below(3);
        let uris: HashSet<String> = (0..n).map(|_| self.uri()).collect();
        let mut sorted: Vec<&String> = uris.iter().collect();
        sorted.sort();
        write_line(
            out,
            &request(
                &id,
                "subscriptions/listen",
                json!({ "notifications": { "resourceSubscriptions": sorted } }),
            ),
        );
        self.tally.listens += 1;
        self.listens.insert(
            id,
            Listen {
                uris,
                acked: false,
                cancelled: false,
            },
        );
    }

    fn cancel_listen(&mut self, out: &mut Vec<u8>) {
        let ids: Vec<Id> = self
            .listens
            .iter()
            .filter(|(_, l)| !l.cancelled)
            .map(|(id, _)| id.clone())
            .collect();
        if ids.is_empty() {
            return;
        }
        let id = ids[self.rng.below(ids.len())].clone();
        self.listens.get_mut(&id).expect("open").cancelled = true;
        self.unproven.push(id.clone());
        write_line(out, &cancel(&id));
    }

    fn send(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let legacy;
        let bytes = if self.legacy {
            legacy = without_modern_meta(bytes);
            &legacy[..]
        } else {
            bytes
        };
        let input = self.input.as_mut().expect("input open");
        input.write_all(bytes).expect("the server reads its input");
    }

    /// Judges the lines in hand; with `wait`, waits for one first.
    fn take_lines(&mut self, wait: bool) -> bool {
        if wait {
            match self.lines.recv_timeout(WAIT) {
                Ok(line) => self.judge(&line),
                Err(RecvTimeoutError::Disconnected) => return false,
                Err(RecvTimeoutError::Timeout) => panic!(
                    "the server stalled: {} requests in flight: {:?}",
                    self.open.len(),
                    self.open
                ),
            }
        }
        while let Ok(line) = self.lines.try_recv() {
            self.judge(&line);
        }
        true
    }

    /// Sends a barrier if cancellations wait for one: requests cancelled
    /// and unanswered leave the model only by it.
    fn prove_cancellations(&mut self) {
        if !self.unproven.is_empty() {
            let mut out = Vec::new();
            self.barrier(&mut out);
            self.send(&out);
        }
    }

    /// Waits until every request in flight is answered.
    fn settle(&mut self) {
        self.prove_cancellations();
        while !self.open.is_empty() {
            self.answer_asks(usize::MAX);
            self.take_lines(true);
        }
    }

    /// Closes the input with everything in flight; then every request not
    /// cancelled gets exactly one reply (its result, or `-32603` for one
    /// cut off), every listen its final result, and the output ends.
    fn end_of_input(mut self) -> Model {
        self.closing = true;
        self.input = None;
        while self.take_lines(true) {}
        let left: Vec<_> = self.open.iter().filter(|(_, r)| !r.cancelled).collect();
        assert!(left.is_empty(), "requests never answered: {left:?}");
        let left: Vec<_> = self.listens.iter().filter(|(_, l)| !l.cancelled).collect();
        assert!(left.is_empty(), "listens never closed: {left:?}");
        assert!(
            self.nulls_due.is_empty(),
            "errors never written for lines that were no request: {:?}",
            self.nulls_due
        );
        let served = self.serving.take().expect("serving").join();
        served.expect("serve panicked").expect("serve failed");
        // Polls cut off before their answer: asked again next round.
        self.polling.clear();
        self
    }

    /// The oracle: one line of the server's output.
    fn judge(&mut self, line: &str) {
        self.tally.lines += 1;
        let msg: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert_eq!(msg["jsonrpc"], "2.0", "{line}");
        match msg.get("method").and_then(Value::as_str) {
            None => self.judge_reply(&msg, line),
            Some("notifications/progress") => self.judge_progress(&msg, line),
            Some("elicitation/create") => self.judge_ask(&msg, line),
            Some("notifications/cancelled") => {
                // The server withdraws an ask of a request the client cancelled.
                let ask = msg["params"]["requestId"].to_string();
                let call = &self
                    .asks
                    .get(&ask)
                    .unwrap_or_else(|| panic!("withdrew no ask: {line}"))
                    .call;
                let req = self
                    .open
                    .get(call)
                    .unwrap_or_else(|| panic!("withdrew the ask of no request in flight: {line}"));
                assert!(
                    req.cancelled,
                    "withdrew the ask of a request not cancelled: {line}"
                );
                self.asks.remove(&ask);
                self.tally.asks_withdrawn += 1;
            }
            Some("notifications/subscriptions/acknowledged") => {
                let id = &msg["params"]["_meta"][SUBSCRIPTION_ID].to_string();
                assert!(!self.dead.contains(id), "ack after a cancellation: {line}");
                let listen = self
                    .listens
                    .get_mut(id)
                    .unwrap_or_else(|| panic!("ack for no listen: {line}"));
                assert!(!listen.acked, "a second ack: {line}");
                listen.acked = true;
            }
            Some("notifications/resources/updated") => {
                let id = &msg["params"]["_meta"][SUBSCRIPTION_ID].to_string();
                let uri = msg["params"]["uri"].as_str().expect("a uri").to_owned();
                assert!(
                    !self.dead.contains(id),
                    "delivered after the cancellation was read: {line}"
                );
                let listen = self
                    .listens
                    .get(id)
                    .unwrap_or_else(|| panic!("delivered to no open listen: {line}"));
                assert!(listen.acked, "delivered before the ack: {line}");
                assert!(
                    listen.uris.contains(&uri),
                    "delivered what was not asked for: {line}"
                );
                let call = self
                    .busy
                    .get(&uri)
                    .unwrap_or_else(|| panic!("published after its call's reply: {line}"));
                let fresh = self.heard.get_mut(call).expect("heard").insert(id.clone());
                assert!(fresh, "delivered twice: {line}");
                self.tally.published += 1;
            }
            Some(other) => panic!("unexpected notification {other}: {line}"),
        }
    }

    fn judge_ask(&mut self, msg: &Value, line: &str) {
        assert!(self.legacy, "an ask in a modern session: {line}");
        let token = msg["params"]["message"].as_str().expect("a message");
        let call = (self.asking.get(token))
            .unwrap_or_else(|| panic!("an ask for no call: {line}"))
            .clone();
        assert!(
            !self.dead.contains(&call),
            "asked for a request after its cancellation was read: {line}"
        );
        assert!(
            self.open.contains_key(&call),
            "asked for a request answered: {line}"
        );
        let id = msg["id"].to_string();
        let old = self.asks.insert(
            id,
            Ask {
                call,
                answered: false,
            },
        );
        assert!(old.is_none(), "two asks with one id: {line}");
        self.tally.asks += 1;
        let waiting = self.waiting();
        for req in self.open.values_mut().filter(|r| r.kind == Kind::Ask) {
            req.peak_waiting = req.peak_waiting.max(waiting);
        }
    }

    fn judge_progress(&mut self, msg: &Value, line: &str) {
        let token = msg["params"]["progressToken"]
            .as_str()
            .expect("a token")
            .to_owned();
        assert!(
            !self.dead_progress.contains(&token),
            "progress after the reply or after the cancellation was read: {line}"
        );
        let id = self
            .progress_of
            .get(&token)
            .unwrap_or_else(|| panic!("progress for no request: {line}"));
        let req = self.open.get_mut(id).expect("in flight while its token is");
        let value = msg["params"]["progress"].as_f64().expect("a number");
        assert!(value > req.last_progress, "progress not increasing: {line}");
        req.last_progress = value;
        self.tally.progress += 1;
    }

    fn judge_reply(&mut self, msg: &Value, line: &str) {
        let id = &msg["id"].to_string();
        if msg["id"].is_null() {
            // For a line that was no request: in the order they were sent.
            let due = (self.nulls_due.pop_front())
                .unwrap_or_else(|| panic!("an error without an id for no line: {line}"));
            assert_eq!(msg["error"]["code"], due, "{line}");
            self.nulls_seen += 1;
            return;
        }
        if self.listens.remove(id).is_some() {
            // A listen's final result: only at the end of input.
            assert!(
                self.closing,
                "a listen ended before the end of input: {line}"
            );
            assert!(msg.get("result").is_some(), "{line}");
            return;
        }
        assert!(
            !self.dead.contains(id),
            "a reply after the cancellation was read: {line}"
        );
        let req = self
            .open
            .remove(id)
            .unwrap_or_else(|| panic!("a reply to no request in flight (a second reply?): {line}"));
        // Its ask is over: answered (or its wait cut short at the end).
        self.asks.retain(|_, a| &a.call != id);
        self.tally.replies += 1;
        if req.cancelled {
            self.tally.replied_despite_cancel += 1;
        }
        if let Some(p) = &req.progress {
            self.progress_of.remove(p);
            self.dead_progress.insert(p.clone());
        }
        if let Kind::Ask = req.kind {
            self.asking.remove(&req.token);
        }
        let asked_too_much = |error: &Value| {
            error["code"] == -32603
                && (error["message"].as_str())
                    .is_some_and(|m| m.contains("already wait for this client's answers"))
        };
        if let Kind::Refused(code) = req.kind {
            // Refused when read, whatever else is going on.
            assert_eq!(msg["error"]["code"], code, "{line}");
        } else if req.kind == Kind::Ask && msg.get("error").is_some_and(asked_too_much) {
            // Only while as many requests waited for answers as may. At the
            // moment the server refused, each had asked (its ask came before
            // this line) and none had its reply (it comes after that moment,
            // so after every one of their asks): at some moment since this
            // call was sent, the model saw them all waiting.
            assert!(
                req.peak_waiting >= self.max_running,
                "an ask refused while at most {} requests waited for answers: {line}",
                req.peak_waiting
            );
            self.tally.asks_refused += 1;
        } else if let Some(error) = msg.get("error") {
            assert!(
                self.closing && error["code"] == -32603,
                "an error where a result was due: {line}"
            );
            self.tally.shut_down_replies += 1;
        } else {
            self.judge_result(&req, &msg["result"], line);
        }
        if let Some((uri, hearers)) = &req.publish {
            self.busy.remove(uri);
            let heard = self.heard.remove(id).expect("heard");
            if msg.get("error").is_none() {
                for hearer in hearers {
                    // Unless cancelled (or closed) since: it must have heard.
                    if self.listens.get(hearer).is_some_and(|l| !l.cancelled) {
                        assert!(
                            heard.contains(hearer),
                            "listen {hearer} did not hear of {uri} before the reply: {line}"
                        );
                    }
                }
            }
        }
        // The lines before the barrier were read before it.
        if let Some(due) = req.nulls_before {
            assert_eq!(
                self.nulls_seen, due,
                "errors for lines read before this barrier came after its reply: {line}"
            );
        }
        for proven in &req.proves {
            // An ask of it left unanswered was withdrawn by now.
            let left: Vec<_> = (self.asks.iter())
                .filter(|(_, a)| &a.call == proven)
                .map(|(id, a)| (id.clone(), a.answered))
                .collect();
            for (ask, answered) in left {
                assert!(
                    answered,
                    "ask {ask} of cancelled request {proven} never withdrawn: {line}"
                );
                self.asks.remove(&ask);
            }
            // An ask for it from now on is for no call, even once its id is
            // reused.
            self.asking.retain(|_, call| call != proven);
            self.dead.insert(proven.clone());
            if let Some(r) = self.open.remove(proven) {
                // Cancelled and proven: nothing more will come for it.
                if let Some(p) = r.progress {
                    self.progress_of.remove(&p);
                    self.dead_progress.insert(p);
                }
            }
            self.listens.remove(proven);
            if !self.closing && is_number(proven) {
                self.reusable.push(proven.clone());
            }
        }
        if !self.closing && is_number(id) && !req.cancelled {
            self.reusable.push(id.clone());
        }
    }

    fn judge_result(&mut self, req: &Req, result: &Value, line: &str) {
        match &req.kind {
            Kind::Call => {
                assert_eq!(
                    result["content"][0]["text"], req.token,
                    "another call's result: {line}"
                );
                assert_ne!(result["isError"], true, "{line}");
            }
            Kind::Task => {
                assert_eq!(result["resultType"], "task", "{line}");
                let task = result["taskId"].as_str().expect("a task id").to_owned();
                self.tasks.insert(task, req.token.clone());
            }
            Kind::Ask => {
                assert_eq!(
                    result["content"][0]["text"],
                    format!("{}:w", req.token),
                    "{line}"
                );
            }
            Kind::WrongArguments => {
                assert_eq!(result["isError"], true, "{line}");
            }
            Kind::Refused(code) => panic!("a result where error {code} was due: {line}"),
            Kind::TaskGet(task) => {
                self.polling.remove(task);
                match result["status"].as_str() {
                    Some("working") => {}
                    Some("completed") => {
                        let token = self.tasks.remove(task).expect("a task of ours");
                        assert_eq!(
                            result["result"]["content"][0]["text"], token,
                            "another task's result: {line}"
                        );
                        self.tally.tasks_done += 1;
                    }
                    _ => panic!("a task neither working nor completed: {line}"),
                }
            }
        }
    }
}

/// `bytes` as a legacy client writes them: each request's `_meta` without
/// the per-request protocol version and capabilities of the modern era
/// (`initialize` declared those). Lines that are not JSON objects stay.
fn without_modern_meta(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        let Ok(mut message) = serde_json::from_slice::<Value>(line) else {
            out.extend_from_slice(line);
            continue;
        };
        let Some(meta) = message
            .pointer_mut("/params/_meta")
            .and_then(Value::as_object_mut)
        else {
            out.extend_from_slice(line);
            continue;
        };
        meta.remove("io.modelcontextprotocol/protocolVersion");
        meta.remove("io.modelcontextprotocol/clientCapabilities");
        if meta.is_empty() {
            message["params"]
                .as_object_mut()
                .expect("params")
                .remove("_meta");
        }
        serde_json::to_writer(&mut out, &message).expect("JSON");
        out.extend_from_slice(if line.ends_with(b"\r\n") {
            b"\r\n"
        } else {
            b"\n"
        });
    }
    out
}

/// Whether an id is a number (the model reuses those).
fn is_number(id: &str) -> bool {
    id.bytes().all(|b| b.is_ascii_digit())
}

/// The id as JSON.
fn id_value(id: &str) -> Value {
    serde_json::from_str(id).expect("an id is JSON text")
}

fn request(id: &str, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    json!({ "jsonrpc": "2.0", "id": id_value(id), "method": method, "params": params })
}

fn cancel(id: &str) -> Value {
    json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": id_value(id) } })
}

fn write_line(out: &mut Vec<u8>, message: &Value) {
    serde_json::to_writer(&mut *out, message).expect("JSON");
    out.push(b'\n');
}

/// xorshift64*: the run's choices, from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

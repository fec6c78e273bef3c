//! The Tasks extension over Streamable HTTP, where each listen is a POST
//! and so a connection of its own: what holds for one client across its
//! streams.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use mcp_stdio::HttpOptions;
use serde_json::{Value, json};

use crate::http::{events, json_body, mirrored, post, start};
use crate::support::WAIT;
use crate::tasks::{accept, task_request};

/// A POST of `request` (a task request: its method mirrored) on `socket`,
/// kept open.
fn send(socket: &mut TcpStream, addr: SocketAddr, request: &Value, name: Option<&str>) {
    let body = request.to_string();
    let method = request["method"].as_str().unwrap();
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (n, v) in mirrored(method, name) {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    head.push_str("\r\n");
    head.push_str(&body);
    socket.write_all(head.as_bytes()).unwrap();
}

/// A task request's answer, over a connection closed after it.
fn ask(addr: SocketAddr, request: &Value, name: Option<&str>) -> Value {
    let method = request["method"].as_str().unwrap();
    let response = post(addr, &mirrored(method, name), &request.to_string());
    (events(&response).pop()).unwrap_or_else(|| json_body(&response))
}

/// Starts a `confirm_delete` task and waits for it to ask its question
/// (from then on it changes only when answered): its id.
fn waiting_task(addr: SocketAddr) -> String {
    let call = task_request(
        "tools/call",
        json!({ "name": "confirm_delete", "arguments": { "filename": "a.txt" } }),
    );
    let created = ask(addr, &call, Some("confirm_delete"));
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + WAIT;
    loop {
        let get = task_request("tasks/get", json!({ "taskId": id }));
        let task = ask(addr, &get, Some(&id));
        if task["result"]["status"] == "input_required" {
            return id;
        }
        assert!(Instant::now() < deadline, "still {task}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Answers the task's question: it completes.
fn complete(addr: SocketAddr, task_id: &str) {
    let update = task_request(
        "tasks/update",
        json!({ "taskId": task_id, "inputResponses": { "confirm": accept(json!({ "confirm": true })) } }),
    );
    let answer = ask(addr, &update, Some(task_id));
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
}

/// One `subscriptions/listen` stream on a connection of its own.
struct Listen {
    socket: TcpStream,
    /// Its request's id: the subscription's.
    id: Value,
    seen: String,
}

impl Listen {
    /// Sends a listen following `task_id`, without reading its answer.
    fn open(addr: SocketAddr, task_id: &str) -> Listen {
        let mut socket = TcpStream::connect(addr).unwrap();
        socket.set_read_timeout(Some(WAIT)).unwrap();
        let listen = task_request(
            "subscriptions/listen",
            json!({ "notifications": { "taskIds": [task_id] } }),
        );
        send(&mut socket, addr, &listen, None);
        Listen {
            socket,
            id: listen["id"].clone(),
            seen: String::new(),
        }
    }

    /// Reads until `seen` holds `what`: false if the stream ends first.
    fn read_for(&mut self, what: &str) -> bool {
        let until = Instant::now() + WAIT;
        let mut buf = [0u8; 4096];
        while !self.seen.contains(what) {
            assert!(Instant::now() < until, "no {what:?}: {}", self.seen);
            match self.socket.read(&mut buf) {
                Ok(0) => return false,
                Ok(n) => self.seen.push_str(&String::from_utf8_lossy(&buf[..n])),
                Err(e) => panic!("{e} before {what:?}: {}", self.seen),
            }
        }
        true
    }

    /// The listen's first answer: its acknowledgment (the stream's first
    /// event) or its refusal (a JSON body).
    fn answer(&mut self) -> Value {
        assert!(self.read_for("\r\n\r\n"), "no head: {}", self.seen);
        let (head, _) = self.seen.split_once("\r\n\r\n").unwrap();
        if head.contains("application/json") {
            let length: usize = (head.lines())
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length: ")?
                        .parse()
                        .ok()
                })
                .unwrap();
            let until = Instant::now() + WAIT;
            while self.seen.split_once("\r\n\r\n").unwrap().1.len() < length {
                assert!(Instant::now() < until, "a short body: {}", self.seen);
                let mut buf = [0u8; 4096];
                let n = self.socket.read(&mut buf).unwrap();
                assert!(n > 0, "a short body: {}", self.seen);
                self.seen.push_str(&String::from_utf8_lossy(&buf[..n]));
            }
            return serde_json::from_str(self.seen.split_once("\r\n\r\n").unwrap().1).unwrap();
        }
        assert!(self.read_for("acknowledged"), "{}", self.seen);
        assert!(self.read_for("}\n\n"), "{}", self.seen);
        events(&self.seen).remove(0)
    }

    /// Whether its answer acknowledges it following `task_id`; if not, it
    /// is refused for the cap (`-32603`, the limit in its data).
    fn follows(&mut self, task_id: &str) -> bool {
        let answer = self.answer();
        if answer["method"] == "notifications/subscriptions/acknowledged" {
            assert_eq!(
                answer["params"]["notifications"]["taskIds"],
                json!([task_id]),
                "{answer}"
            );
            return true;
        }
        assert_eq!(answer["id"], self.id, "{answer}");
        assert_eq!(answer["error"]["code"], -32603, "{answer}");
        assert_eq!(answer["error"]["data"]["limit"], 8, "{answer}");
        false
    }

    /// Reads until the task's end reaches the stream, tagged with its id.
    fn hears_the_end(&mut self) {
        assert!(self.read_for("\"completed\""), "{}", self.seen);
        assert!(self.read_for("}\n\n"), "{}", self.seen);
        let ended = (events(&self.seen).into_iter())
            .find(|e| e["method"] == "notifications/tasks" && e["params"]["status"] == "completed")
            .unwrap();
        assert_eq!(
            ended["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            self.id
        );
    }
}

/// A listen on `task_id` that follows it once a place is free (a stream's
/// end is noticed by the server within its watch, 50 ms): the places given
/// back are taken again, within `WAIT`.
fn follow_when_free(addr: SocketAddr, task_id: &str) -> Listen {
    let deadline = Instant::now() + WAIT;
    loop {
        let mut listen = Listen::open(addr, task_id);
        if listen.follows(task_id) {
            return listen;
        }
        assert!(
            Instant::now() < deadline,
            "no place on the task came back within {WAIT:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

// --- Review (http-listen-cap): the listens of one client on one task -------

/// Claim: on stdio at most 8 listens of a connection follow one task
/// (`MAX_LISTENS_PER_TASK`), since each gets a copy of the task's result
/// (up to `max_task_result_bytes`, 4 MiB) on each status change; over
/// HTTP each listen is a POST, a connection of its own with a table of
/// its own, so the cap never binds: one client's streams, up to
/// `max_connections` (64), all follow the task (256 MiB of copies at the
/// bound against 32 MiB on stdio). On main: all 12 streams, sent at once,
/// are acknowledged with the task and hear its end.
///
/// Fixed: the listens of a listener count together per task
/// (`Followers::follow`, one lock for the check and the count, so
/// listens that arrive together cannot all pass): 8 follow it, the others
/// are refused `-32603` with the limit, and the end is written 8 times.
#[test]
fn listen_streams_on_one_task_are_capped_as_a_connections_listens_are() {
    let http = start(crate::everything::build(), HttpOptions::new());
    let task = waiting_task(http.addr);
    // All sent before any is read: they are served together.
    let mut listens: Vec<Listen> = (0..12).map(|_| Listen::open(http.addr, &task)).collect();
    let mut following: Vec<Listen> = Vec::new();
    for mut listen in listens.drain(..) {
        if listen.follows(&task) {
            following.push(listen);
        }
    }
    assert_eq!(
        following.len(),
        8,
        "{} listen streams of one client follow one task",
        following.len()
    );
    complete(http.addr, &task);
    for listen in &mut following {
        listen.hears_the_end();
    }
}

/// Claim (guard): every way a listen stream ends gives its place on the
/// task back, or a count that drifted up would leave the task
/// unfollowable for good: the client closing its stream (the cancellation
/// of a modern request over HTTP), even before it read the
/// acknowledgment; the application closing one listen
/// (`Notifier::close_subscription`) and all (`close_subscriptions`).
#[test]
fn a_listen_stream_that_ends_any_way_gives_its_place_on_the_task_back() {
    let server = crate::everything::build();
    let notifier = server.notifier();
    let http = start(server, HttpOptions::new());
    let task = waiting_task(http.addr);
    let refused = || {
        let mut ninth = Listen::open(http.addr, &task);
        assert!(
            !ninth.follows(&task),
            "a ninth listen stream follows the task"
        );
    };
    let mut following: Vec<Listen> = (0..8).map(|_| follow_when_free(http.addr, &task)).collect();
    refused();
    // The client closes a stream: a place, and only one.
    drop(following.pop());
    following.push(follow_when_free(http.addr, &task));
    refused();
    // The application closes one: its final result, then a place.
    let mut closed = following.pop().unwrap();
    let closed_id: mcp_stdio::RequestId = serde_json::from_value(closed.id.clone()).unwrap();
    notifier.close_subscription(&closed_id);
    assert!(closed.read_for("\"complete\""), "{}", closed.seen);
    following.push(follow_when_free(http.addr, &task));
    refused();
    // All closed: 8 final results, then 8 places.
    notifier.close_subscriptions();
    for listen in &mut following {
        assert!(listen.read_for("\"complete\""), "{}", listen.seen);
    }
    following = (0..8).map(|_| follow_when_free(http.addr, &task)).collect();
    refused();
    // Streams that die before their acknowledgment is read: all 8 closed,
    // 8 listens sent and dropped unread, and still 8 places come back.
    following.clear();
    for _ in 0..8 {
        drop(Listen::open(http.addr, &task));
    }
    following = (0..8).map(|_| follow_when_free(http.addr, &task)).collect();
    refused();
    complete(http.addr, &task);
    for listen in &mut following {
        listen.hears_the_end();
    }
}

/// Claim (review cap11): a listen stream let go for a client that reads
/// nothing (past `UNSENT_LIMIT` of events waiting, or the write timeout)
/// keeps its place on the task: the subscription is not removed, and
/// the task stays fully followed by streams nobody reads. Tested false:
/// the let-go ends the exchange's watch, `shut_down` closes its
/// subscriptions (`Conn::close`), and the places come back: 8 streams
/// cut for falling behind (a 64 KiB URI updated 300 times), then 8 new
/// listens follow the task, and a ninth does not.
#[test]
fn listen_streams_let_go_for_falling_behind_give_their_places_back() {
    let server = crate::everything::build();
    let notifier = server.notifier();
    let http = start(
        server,
        HttpOptions::new().write_timeout(Duration::from_secs(60)),
    );
    let task = waiting_task(http.addr);
    let uri = format!("mem://{}", "z".repeat(64 * 1024));
    let mut stuck: Vec<Listen> = (0..8)
        .map(|_| {
            let mut socket = TcpStream::connect(http.addr).unwrap();
            socket.set_read_timeout(Some(WAIT)).unwrap();
            let listen = task_request(
                "subscriptions/listen",
                json!({ "notifications": { "taskIds": [task], "resourceSubscriptions": [uri] } }),
            );
            send(&mut socket, http.addr, &listen, None);
            let mut listen = Listen {
                socket,
                id: listen["id"].clone(),
                seen: String::new(),
            };
            assert!(listen.follows(&task), "{}", listen.seen);
            listen
        })
        .collect();
    assert!(!Listen::open(http.addr, &task).follows(&task));
    for _ in 0..300 {
        notifier.resource_updated(&uri);
    }
    // Every stream was cut (read to its end, long before the write
    // timeout), and its place is free again.
    for listen in &mut stuck {
        let started = Instant::now();
        let mut rest = Vec::new();
        let _ = listen.socket.read_to_end(&mut rest);
        assert!(started.elapsed() < WAIT, "a stream behind stayed open");
    }
    let mut following: Vec<Listen> = (0..8).map(|_| follow_when_free(http.addr, &task)).collect();
    assert!(!Listen::open(http.addr, &task).follows(&task));
    complete(http.addr, &task);
    for listen in &mut following {
        listen.hears_the_end();
    }
}

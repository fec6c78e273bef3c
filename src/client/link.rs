//! One live connection to a server: a writer thread, a reader thread, and
//! the tables that route what the server sends to whoever waits for it.
//!
//! ```text
//! caller threads ──► writer channel ──► mcp-client-writer ──► server input
//!        └───── (a spawned server's pipe, when the write cannot block) ─┘
//! server output ──► mcp-client-reader ──► response        → pending[id]
//!                                       ──► subscriptionId  → subscriptions[id]
//!                                       ──► progress token  → pending[request of that token]
//!                                       ──► log message     → the one request that asked for logs,
//!                                                             else the client-level log callback
//! ```
//!
//! Callers never block on the server's input: lines go through a channel
//! to the writer thread, so a timeout or a cancellation always fires; a
//! caller writes its own line only to a spawned server's pipe in
//! non-blocking mode, when nothing is queued (`input`). The channel holds
//! at most `input::MAX_QUEUED_BYTES` (16 MiB) and one line: past it a line
//! is refused, and a request fails at once, rather than the client
//! growing while the server does not read. Everything the reader routes to a request or a subscription is
//! sent over channels, and their callbacks run on the caller's thread; what
//! waits in them is bounded in bytes (`backlog`): past the line limit a
//! subscription ends `Overflowed`, cancelled at the server, and a call's
//! progress and log messages are dropped, so the reader never waits for
//! the application and holds no more than that for it. Only
//! the client-level `ClientBuilder::on_log` and `wire` hooks run on the
//! reader, each under `Notes::guard`, so that a panic in one cannot end the
//! reader before it fails what waits. Notes (`ClientBuilder::trace`, or stderr by default) are queued
//! for a note thread (`note_queue`), so that a locked or full stderr never
//! stalls the reader. What the reader does with each line is in `route`.
//!
//! `Link`'s methods by job: this file starts a link and watches its end;
//! `sends.rs` what goes to the server (a line written or queued, a
//! cancellation, the input closed) and `waits.rs` what waits for the
//! server (requests and subscriptions registered, forgotten, failed).

use std::io::BufRead;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::client::input::InputHandlers;
use crate::client::notes::Notes;
use crate::client::wire::Wire;
use crate::error::Error;
use crate::jsonrpc::{IdMap, RequestId};
use crate::note_limiter::NoteLimiter;
use crate::sync::lock;
#[cfg(feature = "legacy")]
use crate::types::SubscriptionFilter;
use crate::types::{LoggingMessageNotificationParams, ProgressNotificationParams};
use backlog::Backlog;
pub(crate) use backlog::{Held, SubscriptionSink};
#[cfg(feature = "http")]
pub(crate) use carrier::{Carrier, Inbox};
pub(crate) use input::ServerInput;
use input::{Input, Queued};

#[cfg(feature = "legacy")]
mod answer;
mod backlog;
#[cfg(feature = "http")]
mod carrier;
mod input;
mod route;
mod sends;
#[cfg(all(test, feature = "legacy"))]
mod tests;
mod waits;

#[cfg(feature = "legacy")]
/// The legacy subscriptions of a connection: the accepted filter of each,
/// by its client-side id.
pub(crate) type LegacyFilters = IdMap<SubscriptionFilter>;

/// How many of a legacy server's requests the application's input handlers
/// answer at once, each on a thread of its own (a handler may wait for a
/// person). Past it, a request is answered `-32603` at once, saying so:
/// a server that asks without end costs a bounded number of threads.
#[cfg(feature = "legacy")]
pub(crate) const MAX_ANSWERING: usize = 32;

/// How many given-up requests a link keeps hearing at once
/// ([`Link::forget_but_hear`]). Each entry outlives its request and holds
/// what its closure holds (for a proxy, its caller's capabilities), so a
/// caller that starts and cancels calls in a loop costs at most this many;
/// past it the entry nearest its end goes (the reply that crosses a
/// cancellation comes soon after it, if at all).
pub(crate) const MAX_LATE: usize = 1024;

/// What the reader delivers to a waiting request.
#[derive(Debug)]
pub(crate) enum Delivery {
    /// The final answer: a result object, the peer's error
    /// ([`Error::Rpc`]), or an answer that could not be read.
    Reply(Result<Box<RawValue>, Error>),
    /// A progress notification for this request, and its share of the
    /// request's backlog.
    Progress(ProgressNotificationParams, Held),
    /// A log message for this request, and its share of the request's
    /// backlog.
    Log(LoggingMessageNotificationParams, Held),
    /// The connection is gone.
    Disconnected,
}

/// What the reader delivers to a subscription.
#[derive(Debug)]
pub(crate) enum SubscriptionDelivery {
    /// A notification tagged with the subscription's id (or one a legacy
    /// subscription wants), and its share of the subscription's backlog
    /// (kept for its `Drop`, which gives the share back).
    Notification {
        method: String,
        params: Value,
        _held: Held,
    },
    /// The listen request's final result (or an error answering it, or
    /// an answer that could not be read).
    Reply(Result<Box<RawValue>, Error>),
    /// The connection is gone.
    Disconnected,
    /// The connection is gone and the client is restarting the server; the
    /// listen will be sent again.
    Reconnecting,
    /// The server tore the subscription down with `notifications/cancelled`.
    TornDown,
    /// The application did not read the subscription's events: more than
    /// the line limit of them waited, and the client cancelled it at the
    /// server. Sent after every event it holds.
    Overflowed,
}

/// What [`Link::forget_subscription`] found.
pub(crate) enum Forgotten {
    /// Nothing: the server ended it, or the link died.
    Nothing,
    /// A `subscriptions/listen` still open.
    Tagged,
    #[cfg(feature = "legacy")]
    /// A subscription emulated on a legacy server, with its accepted filter.
    Legacy(SubscriptionFilter),
}

/// The death watch of a link: armed with a callback, or past its death.
enum DeathWatch {
    /// Alive; the callback, once armed.
    Unarmed(Option<Box<dyn FnOnce() + Send>>),
    /// The reader ended; a callback armed now runs at once.
    Dead,
}

/// A request waiting for its answer, with what routes progress and log
/// messages to it.
struct Pending {
    tx: Sender<Delivery>,
    progress_token: Option<RequestId>,
    wants_logs: bool,
    /// The bytes of its progress and log messages not taken yet.
    backlog: Arc<Backlog>,
}

/// What reads a reply that came after its request was given up on, and
/// says what to send for it: a request's method and its params as they go
/// (stamped already), sent without waiting for its answer. It runs on the
/// thread that read the reply, so it only reads and builds: no waiting.
pub(crate) type LateReply = Box<dyn FnOnce(&RawValue) -> Option<(&'static str, Value)> + Send>;

/// A request given up on whose reply is still wanted, until `until`
/// ([`Link::forget_but_hear`]).
pub(crate) struct Late {
    pub until: Instant,
    pub then: LateReply,
}

/// How a link's lines reach the server.
enum Outbound {
    /// A byte stream, written by the writer thread: its queue (`None` once
    /// the input was closed) and the server's input, shared with it.
    Stream {
        writer: Mutex<Option<Sender<Queued>>>,
        input: Arc<Input>,
    },
    /// A transport that carries one message at a time, and hands back the
    /// answers itself (`carrier`).
    #[cfg(feature = "http")]
    Carrier(Box<dyn Carrier>),
}

/// A live connection.
pub(crate) struct Link {
    out: Outbound,
    pending: Mutex<IdMap<Pending>>,
    /// Requests given up on whose late reply is still read
    /// ([`Link::forget_but_hear`]); taken only under `pending`'s lock, or
    /// after it, never before.
    late: Mutex<IdMap<Late>>,
    subscriptions: Mutex<IdMap<SubscriptionSink>>,
    /// The subscriptions emulated on a legacy server, which get untagged
    /// notifications (see `legacy_listen`).
    #[cfg(feature = "legacy")]
    legacy: Mutex<LegacyFilters>,
    alive: AtomicBool,
    /// Whether the client will restart the server when this link dies.
    pub restartable: AtomicBool,
    /// Set on a legacy connection: the handlers that answer the server's
    /// requests (see `server_requests`).
    server_requests: Mutex<Option<InputHandlers>>,
    /// A legacy server's requests being answered, by id, at most
    /// [`MAX_ANSWERING`]; the flag is set when the server cancels one.
    #[cfg(feature = "legacy")]
    answering: Mutex<IdMap<Arc<AtomicBool>>>,
    /// What happens when the link dies: armed once, called once (see
    /// [`Link::on_death`]).
    on_death: Mutex<DeathWatch>,
    /// Disconnected once the reader thread has ended (nothing is sent).
    reader_ended: Receiver<()>,
    next_id: AtomicU64,
    /// The longest line read from the server, and the most bytes of
    /// notifications that wait for one request or one subscription.
    max_line: usize,
    /// Limits the notes of lines refused by a full queue (`send`).
    unsent: Mutex<NoteLimiter>,
    /// Limits the notes of a legacy server's requests the client could
    /// not read (`answer_request`).
    #[cfg(feature = "legacy")]
    unreadable: Mutex<NoteLimiter>,
    notes: Notes,
    /// Sees every line read (`ClientBuilder::wire`); `input` holds its own
    /// clone for the lines written.
    wire: Wire,
}

impl Link {
    /// Starts the reader and writer threads over a byte-stream pair.
    pub fn start(
        reader: Box<dyn BufRead + Send>,
        writer: ServerInput,
        max_line: usize,
        notes: Notes,
        wire: Wire,
    ) -> std::io::Result<Arc<Link>> {
        let (tx, rx) = crossbeam_channel::unbounded::<Queued>();
        let input = Input::new(writer, wire.clone(), notes.clone());
        // Nothing is ever sent: `reader_ended` sees the end when the reader
        // thread drops its sender.
        let (reading_tx, reader_ended) = crossbeam_channel::bounded::<()>(0);
        let out = Outbound::Stream {
            writer: Mutex::new(Some(tx)),
            input: Arc::clone(&input),
        };
        let link = Arc::new(Link::new(out, reader_ended, max_line, notes, wire));
        thread::Builder::new()
            .name("mcp-client-writer".into())
            .spawn(move || input.write_loop(rx))?;
        let reading = Arc::clone(&link);
        thread::Builder::new()
            .name("mcp-client-reader".into())
            .spawn(move || {
                let _reading = reading_tx;
                reading.read_loop(reader, max_line);
            })?;
        Ok(link)
    }

    #[cfg(feature = "http")]
    /// A link over a transport that carries one message at a time, made
    /// by `carrier` with the inbox it hands the server's messages to: no
    /// thread of the link's own (see `carrier`).
    pub fn start_carried(
        carrier: impl FnOnce(Inbox) -> Box<dyn Carrier>,
        max_line: usize,
        notes: Notes,
        wire: Wire,
    ) -> Arc<Link> {
        let (reading, reader_ended) = crossbeam_channel::bounded::<()>(0);
        Arc::new_cyclic(|link| {
            let out = Outbound::Carrier(carrier(Inbox::new(link.clone(), reading)));
            Link::new(out, reader_ended, max_line, notes, wire)
        })
    }

    fn new(
        out: Outbound,
        reader_ended: Receiver<()>,
        max_line: usize,
        notes: Notes,
        wire: Wire,
    ) -> Link {
        Link {
            out,
            pending: Mutex::new(IdMap::default()),
            late: Mutex::new(IdMap::default()),
            subscriptions: Mutex::new(IdMap::default()),
            #[cfg(feature = "legacy")]
            legacy: Mutex::new(LegacyFilters::default()),
            alive: AtomicBool::new(true),
            restartable: AtomicBool::new(false),
            server_requests: Mutex::new(None),
            #[cfg(feature = "legacy")]
            answering: Mutex::new(IdMap::default()),
            on_death: Mutex::new(DeathWatch::Unarmed(None)),
            reader_ended,
            next_id: AtomicU64::new(1),
            max_line,
            unsent: Mutex::default(),
            #[cfg(feature = "legacy")]
            unreadable: Mutex::default(),
            notes,
            wire,
        }
    }

    /// A fresh id, unique among this connection's requests.
    pub fn next_id(&self) -> RequestId {
        RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed) as i64)
    }

    /// Whether this client sent a request with `id` (it numbers its
    /// requests 1, 2, 3, ...).
    pub fn sent(&self, id: &RequestId) -> bool {
        let next = self.next_id.load(Ordering::Relaxed);
        matches!(id, RequestId::Number(n) if *n >= 1 && (*n as u64) < next)
    }

    /// Whether the connection still works: false once the reader stopped
    /// and failed everything waiting.
    pub fn is_alive(&self) -> bool {
        self.alive.load(Ordering::Acquire)
    }

    /// Waits up to `timeout` for the reader thread to end (the server's
    /// output ended and everything it wrote was routed); whether it did.
    pub fn wait_reader(&self, timeout: std::time::Duration) -> bool {
        matches!(
            self.reader_ended.recv_timeout(timeout),
            Err(crossbeam_channel::RecvTimeoutError::Disconnected)
        )
    }

    /// Whether this is a legacy (`initialize`) connection: only those
    /// answer the server's requests.
    fn is_legacy(&self) -> bool {
        lock(&self.server_requests).is_some()
    }

    /// Arms what runs when the link dies: by the reader when it ends, or
    /// here, at once, if it already has. Either way it runs exactly once,
    /// so a death before the watch was armed is never missed.
    pub fn on_death(&self, callback: Box<dyn FnOnce() + Send>) {
        let mut watch = lock(&self.on_death);
        if let DeathWatch::Unarmed(slot) = &mut *watch {
            *slot = Some(callback);
            return;
        }
        drop(watch);
        callback();
    }

    /// The reader's end: the watch is past its death, and its callback
    /// (if armed) runs now.
    fn died(&self) {
        let watch = std::mem::replace(&mut *lock(&self.on_death), DeathWatch::Dead);
        if let DeathWatch::Unarmed(Some(callback)) = watch {
            callback();
        }
    }
}

/// What a line the client sends is, for a note: a request's method and
/// id, a cancellation and the request it names, a notification's method,
/// or the answer to a legacy server's request.
fn describe(line: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Head<'a> {
        #[serde(default, borrow)]
        method: Option<&'a str>,
        #[serde(default, borrow)]
        id: Option<&'a RawValue>,
        #[serde(default, borrow)]
        params: Option<&'a RawValue>,
    }
    #[derive(serde::Deserialize)]
    struct Cancelled<'a> {
        #[serde(rename = "requestId", borrow)]
        request_id: &'a RawValue,
    }
    let Ok(head) = serde_json::from_slice::<Head<'_>>(line) else {
        return "a line".into();
    };
    let request_id = (head.params)
        .and_then(|p| serde_json::from_str::<Cancelled<'_>>(p.get()).ok())
        .map(|c| c.request_id.get());
    match (head.method, head.id, request_id) {
        (Some(method), Some(id), _) => format!("the request {method} (id {})", id.get()),
        (Some(method), None, Some(request)) => format!("{method} for request {request}"),
        (Some(method), None, None) => method.to_owned(),
        (None, Some(id), _) => format!("the answer to the server's request {}", id.get()),
        (None, None, _) => "a line".into(),
    }
}

/// A link over pipes, for tests: the server's output stays open until the
/// returned writer is dropped; each line the client writes comes out of
/// the receiver, which ends once the client's input is closed.
#[cfg(test)]
pub(crate) fn over_pipes(
    options: &crate::client::ClientBuilder,
) -> (
    Arc<Link>,
    std::io::PipeWriter,
    crossbeam_channel::Receiver<serde_json::Value>,
) {
    use std::io::BufReader;
    let (output, server_writes) = std::io::pipe().expect("a pipe");
    let (server_reads, input) = std::io::pipe().expect("a pipe");
    let link = Link::start(
        Box::new(BufReader::new(output)),
        ServerInput::stream(Box::new(input)),
        options.max_line_bytes,
        options.notes.clone(),
        None,
    )
    .expect("a link");
    let (tx, rx) = crossbeam_channel::unbounded();
    std::thread::spawn(move || {
        for line in BufReader::new(server_reads).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(serde_json::from_str(&line).unwrap_or(serde_json::Value::Null));
        }
    });
    (link, server_writes, rx)
}

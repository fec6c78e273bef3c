//! The driver: the reader thread, and the owner loop that runs on the
//! thread that called [`Server::serve`](crate::Server::serve).
//!
//! ```text
//! input ──► mcp-reader ──► inbox ──► owner ──► output (8 KiB buffer, flushed when the inbox is empty)
//!                            ▲ ▲       │ pooled jobs
//!                            │ └─ Done ┴──► mcp-worker-N
//!                            └─ Publish ◄── Notifier (any thread)
//! ```
//!
//! The owner alone writes the output and alone holds the cancellation map
//! and the subscription table, so a reply is written only if its request
//! is still in flight and no request is answered twice. Why the owner writes instead of a writer
//! thread: each thread hand-off costs several microseconds, and the owner
//! already has every reply in hand (DESIGN.md has the measurements).
//!
//! Backpressure without a cycle of bounded channels: before it reads a
//! line the reader takes a read-ahead credit (`reader::ReadAhead`), and the
//! owner gives it back once it is done with the line, or, for a request
//! that must wait for a free worker, once that request starts. So at most
//! `queue_limit` lines and, past one line, about `queue_bytes` bytes are
//! read but not started; past that the reader stops reading, while
//! everything it already read (cancellations included) is still handled.

use std::collections::{HashMap, VecDeque};
use std::io::{self, BufWriter, Write};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use serde::Deserialize;
use serde_json::json;

use crate::error::Error;
use crate::incoming::Incoming;
use crate::jsonrpc::{ErrorObject, RequestId, encode_error};
use crate::server::cancel::CancelToken;
use crate::server::context::{RequestContext, Sink};
use crate::server::dispatch::{Prepared, prepare};
use crate::server::heap;
use crate::server::in_flight::{Entry, InFlight};
use crate::server::legacy::{AskReply, LegacySession};
use crate::server::pool::{Pool, PoolJob};
use crate::server::reader;
use crate::server::reply::Reply;
use crate::server::subscriptions::{
    ServerEvent, SubscriptionTable, Template, encode_ack, encode_final, inline,
};
use crate::server::work::{Job, Work, run};
use crate::server::{ConnectionHandle, Inner, PUBLISH_CREDITS, Server};
use crate::transport::Transport;
use crate::types::method;

mod legacy_client;

/// Everything the owner thread reacts to, in arrival order.
pub(crate) enum Event {
    /// A line from the reader, and its size (it holds one read-ahead
    /// credit and that many bytes).
    Line(Incoming, usize),
    /// The input ended (or failed).
    Eof,
    /// A pooled request finished with this response line.
    Done {
        id: RequestId,
        seq: u64,
        line: Vec<u8>,
    },
    /// A pooled request sent a request-scoped notification.
    /// `credited`: the handler took a publish credit for it.
    Notify {
        id: RequestId,
        seq: u64,
        line: Vec<u8>,
        credited: bool,
    },
    /// [`crate::StopHandle::stop`] was called.
    Stop,
    /// A legacy request's handler asks the client for input: write this
    /// request to the client and hand its response to `reply`.
    AskClient {
        id: RequestId,
        line: Vec<u8>,
        reply: Sender<AskReply>,
        /// The sequence number of the request that asks.
        seq: u64,
    },
    /// The request that made this ask was cancelled: cancel it at the client.
    AskWithdrawn { id: RequestId },
    /// The application published a change, or closes subscriptions.
    /// `credited`: the publisher took a publish credit for it.
    Publish { event: ServerEvent, credited: bool },
}

/// A pooled request waiting for a free slot.
struct Waiting {
    ctx: RequestContext,
    seq: u64,
    work: Work,
    /// The size of its line, released when it starts.
    bytes: usize,
}

/// Serves one connection until its input ends or a stop is requested.
pub(crate) fn serve(inner: &Arc<Inner>, transport: Transport) -> Result<(), Error> {
    let config = &inner.config;
    let (reader, writer) = transport.into_parts();
    let (inbox_tx, inbox) = crossbeam_channel::unbounded();
    // Capacity = how many lines may be read but not yet started.
    let ahead = Arc::new(reader::ReadAhead::new(
        config.queue_limit,
        config.queue_bytes,
    ));
    let key = inner.next_connection_key();
    // Capacity = how many published events may wait in the inbox.
    let (credit, publish_credits) = crossbeam_channel::bounded(PUBLISH_CREDITS);
    inner.connect(ConnectionHandle {
        key,
        inbox: inbox_tx.clone(),
        publish_credits: credit.clone(),
    });
    {
        let inbox = inbox_tx.clone();
        let max_line = config.max_line_bytes;
        let traced = Arc::clone(inner);
        thread::Builder::new()
            .name("mcp-reader".into())
            .spawn({
                let ahead = Arc::clone(&ahead);
                move || {
                    let trace = |line: &str| traced.trace(line);
                    reader::read_loop(reader, inbox, ahead, max_line, &trace)
                }
            })
            .map_err(Error::Io)?;
    }
    // Parked requests (see `Owner::parked`) hold threads of their own.
    let pool = Pool::new(config.workers, 2 * config.max_running, inbox_tx.clone());
    let mut owner = Owner {
        inner: Arc::clone(inner),
        out: BufWriter::with_capacity(8 * 1024, writer),
        key,
        inbox_tx,
        ahead,
        publish_credits,
        credit,
        in_flight: InFlight::default(),
        subscriptions: SubscriptionTable::default(),
        asks: HashMap::new(),
        parked: HashMap::new(),
        legacy: None,
        waiting: VecDeque::new(),
        running: 0,
        pool,
        next_seq: 0,
        inline_token: CancelToken::new(),
        write_error: None,
        worked: false,
    };
    let res = owner.run(&inbox);
    inner.disconnect(key);
    res
}

struct Owner {
    inner: Arc<Inner>,
    out: BufWriter<Box<dyn Write + Send>>,
    /// This connection's key among the server's connections.
    key: u64,
    inbox_tx: Sender<Event>,
    ahead: Arc<reader::ReadAhead>,
    publish_credits: Receiver<()>,
    /// The other end of `publish_credits`, for the sinks of pooled handlers.
    credit: Sender<()>,
    in_flight: InFlight,
    subscriptions: SubscriptionTable,
    /// This server's requests to a legacy client, by id, awaiting its
    /// response (see `legacy_input`).
    asks: HashMap<RequestId, (Sender<AskReply>, u64)>,
    /// Pooled requests waiting for the client's answers, by sequence
    /// number, with how many asks each has open. They hold a worker thread
    /// but not a place among `max_running`: they wait on input, so if they
    /// filled the pool, the requests queued behind them would fill the
    /// read-ahead, the reader would stop, and the answers would never be
    /// read. At most `max_running` requests may be parked.
    parked: HashMap<u64, usize>,
    /// The legacy session of this connection, once a client sent
    /// `initialize`.
    legacy: Option<LegacySession>,
    waiting: VecDeque<Waiting>,
    running: usize,
    pool: Pool,
    next_seq: u64,
    /// Inline handlers run to completion before the owner reads the next
    /// event, so nothing can cancel them: they share one token.
    inline_token: CancelToken,
    write_error: Option<io::Error>,
    /// Something happened since the heap was last given back.
    worked: bool,
}

/// How long the inbox stays empty before freed memory goes back to the
/// system.
const IDLE: Duration = Duration::from_millis(250);

impl Owner {
    fn run(&mut self, inbox: &Receiver<Event>) -> Result<(), Error> {
        if self.inner.is_stopped() {
            return Ok(());
        }
        let mut deadline: Option<Instant> = None;
        loop {
            let event = match inbox.try_recv() {
                Ok(event) => event,
                Err(_) => {
                    // Nothing more to write right now: one flush per burst.
                    self.flush();
                    if self.write_error.is_some() {
                        break;
                    }
                    let next = match deadline {
                        Some(at) => inbox.recv_deadline(at).ok(),
                        // Idle after some work: what it freed goes back
                        // to the system (see `heap`).
                        None if self.worked && self.inner.config.release_memory => {
                            match inbox.recv_timeout(IDLE) {
                                Err(RecvTimeoutError::Timeout) => {
                                    self.worked = false;
                                    self.ahead.free_parked();
                                    heap::give_back();
                                    continue;
                                }
                                next => next.ok(),
                            }
                        }
                        None => inbox.recv().ok(),
                    };
                    match next {
                        Some(event) => event,
                        None => break,
                    }
                }
            };
            self.worked = true;
            match event {
                Event::Line(incoming, bytes) => self.on_line(incoming, bytes, deadline.is_some()),
                Event::Eof | Event::Stop => {
                    if deadline.is_none() {
                        deadline = Some(Instant::now() + self.inner.config.shutdown_grace);
                        self.close_all_subscriptions();
                        self.drop_asks();
                    }
                }
                Event::Publish { event, credited } => {
                    if credited {
                        // The publisher holds one, so one is there to take.
                        let _ = self.publish_credits.try_recv();
                    }
                    self.publish(&event);
                }
                Event::Done { id, seq, line } => {
                    self.forget_asks_of(seq);
                    self.running -= 1;
                    if self.in_flight.finish(&id, seq) {
                        self.write(&line);
                    }
                    self.start_waiting();
                }
                Event::AskClient {
                    id,
                    line,
                    reply,
                    seq,
                } => self.on_ask(id, line, reply, seq, deadline.is_some()),
                Event::AskWithdrawn { id } => self.on_ask_withdrawn(id),
                Event::Notify {
                    id,
                    seq,
                    line,
                    credited,
                } => {
                    if credited {
                        let _ = self.publish_credits.try_recv();
                    }
                    if self.in_flight.is_current(&id, seq) {
                        self.write(&line);
                    }
                }
            }
            if self.write_error.is_some() || (deadline.is_some() && self.in_flight.is_empty()) {
                break;
            }
        }
        self.shut_down()
    }

    /// Past the grace period (or with the output gone): cancel what is
    /// left, tell the client, flush.
    fn shut_down(&mut self) -> Result<(), Error> {
        self.close_all_subscriptions();
        let left: Vec<(RequestId, Entry)> = self.in_flight.drain().collect();
        for (id, entry) in left {
            entry.token.cancel();
            let error =
                ErrorObject::internal_error("the server shut down before the request finished");
            self.write_error_line(Some(&id), &error);
        }
        self.waiting.clear();
        self.flush();
        match self.write_error.take() {
            Some(e) => Err(Error::Io(e)),
            None => Ok(()),
        }
    }

    fn on_line(&mut self, incoming: Incoming, bytes: usize, stopping: bool) {
        let mut keep_credit = false;
        match incoming {
            Incoming::Request { id, method, params } => {
                if stopping {
                    let error = ErrorObject::internal_error("the server is shutting down");
                    self.write_error_line(Some(&id), &error);
                } else if self.in_flight.contains(&id) || self.subscriptions.contains(&id) {
                    let error = ErrorObject::invalid_request(format!(
                        "request id {id} is already in use by a request in flight"
                    ));
                    self.write_error_line(Some(&id), &error);
                } else {
                    match prepare(&self.inner, &method, params, self.legacy.as_ref()) {
                        Ok(Prepared::Run(job)) => keep_credit = self.start(id, job, bytes),
                        Ok(Prepared::Listen(_))
                            if self.subscriptions.len() >= self.inner.config.max_subscriptions =>
                        {
                            let max = self.inner.config.max_subscriptions;
                            let error = ErrorObject::internal_error(format!(
                                "too many open subscriptions on this connection (at most {max}): cancel one first"
                            ))
                            .with_data(json!({ "limit": max }));
                            self.write_error_line(Some(&id), &error);
                        }
                        Ok(Prepared::Listen(accepted)) => {
                            // Spec 2026-07-28 basic/patterns/subscriptions: the
                            // ack is the first message carrying this id. It is
                            // written in the same step that makes the
                            // subscription visible to events.
                            let mut line = Vec::with_capacity(160);
                            encode_ack(&mut line, &id, &accepted);
                            self.subscriptions.insert(id, accepted);
                            self.write(&line);
                        }
                        Ok(Prepared::Legacy(request)) => self.on_legacy(&id, request),
                        Err(error) => self.write_error_line(Some(&id), &error),
                    }
                }
            }
            Incoming::Notification { method, params } => {
                if method == method::NOTIFICATION_CANCELLED {
                    self.on_cancelled(params.as_deref().map(|p| p.get()));
                } else if method == "notifications/initialized"
                    && let Some(session) = &mut self.legacy
                {
                    session.initialized = true;
                }
                // Spec 2026-07-28 basic/index: notifications are never
                // answered; unknown ones are ignored.
            }
            Incoming::Response { id, reply } => self.on_response(id, reply),
            Incoming::Invalid { id, error } => self.write_error_line(id.as_ref(), &error),
        }
        if !keep_credit {
            self.ahead.release(bytes);
        }
    }

    /// Starts a job: inline on this thread, or on the pool (or queued when
    /// the pool is at its cap). Returns whether the job was queued, in which
    /// case it keeps its credit until it starts.
    fn start(&mut self, id: RequestId, job: Job, bytes: usize) -> bool {
        if job.inline {
            let ctx = RequestContext::new(
                id,
                job.meta,
                self.inline_token.clone(),
                Sink::Local(Mutex::new(Vec::new())),
                self.server(),
                job.retry,
            );
            let (reply, published) = inline::run(self.key, || run(job.work, &ctx));
            if let Sink::Local(notes) = ctx.sink() {
                let notes = std::mem::take(&mut *notes.lock().unwrap_or_else(|e| e.into_inner()));
                for note in notes {
                    self.write(&note);
                }
            }
            // What the handler published takes effect before its reply and
            // before anything the client sent after it.
            for event in &published {
                self.publish(event);
            }
            // Encoded straight into the output: no copy of a large result.
            self.write_reply(reply);
            return false;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let token = CancelToken::new();
        let sink = Sink::Inbox {
            inbox: self.inbox_tx.clone(),
            seq,
            credits: self.credit.clone(),
        };
        let ctx = RequestContext::new(
            id.clone(),
            job.meta,
            token.clone(),
            sink,
            self.server(),
            job.retry,
        );
        let waiting = self.running >= self.inner.config.max_running;
        self.in_flight.insert(
            id,
            Entry {
                seq,
                token,
                waiting,
            },
        );
        if waiting {
            self.waiting.push_back(Waiting {
                ctx,
                seq,
                work: job.work,
                bytes,
            });
        } else {
            self.running += 1;
            self.pool.submit(
                PoolJob {
                    ctx,
                    seq,
                    work: job.work,
                },
                self.running + self.parked.len(),
            );
        }
        waiting
    }

    /// Starts waiting requests while there is room in the pool.
    fn start_waiting(&mut self) {
        while self.running < self.inner.config.max_running {
            let Some(Waiting {
                ctx,
                seq,
                work,
                bytes,
            }) = self.waiting.pop_front()
            else {
                return;
            };
            if self.in_flight.start(ctx.id(), seq) {
                self.ahead.release(bytes);
                self.running += 1;
                self.pool
                    .submit(PoolJob { ctx, seq, work }, self.running + self.parked.len());
            }
        }
    }

    /// `notifications/cancelled`: malformed or unknown ones are ignored
    /// (spec 2026-07-28 basic/patterns/cancellation, "Error Handling").
    fn on_cancelled(&mut self, params: Option<&str>) {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Cancelled {
            request_id: RequestId,
        }
        let Some(Cancelled { request_id }) = params.and_then(|p| serde_json::from_str(p).ok())
        else {
            return;
        };
        if let Some(entry) = self.in_flight.cancel(&request_id) {
            if entry.waiting
                && let Some(at) = self.waiting.iter().position(|w| w.seq == entry.seq)
                && let Some(waiting) = self.waiting.remove(at)
            {
                self.ahead.release(waiting.bytes);
            }
        } else {
            // A cancelled listen ends without a final result: from here on
            // nothing carries its subscription id.
            self.subscriptions.remove(&request_id);
        }
    }

    /// Delivers a published event to every subscription that asked for it,
    /// or closes subscriptions.
    fn publish(&mut self, event: &ServerEvent) {
        self.publish_legacy(event);
        match event {
            ServerEvent::CloseAll => self.close_all_subscriptions(),
            ServerEvent::Close(id) => {
                if self.subscriptions.remove(id) {
                    self.write_final(id);
                }
            }
            _ => {
                let Some(template) = Template::for_event(event) else {
                    return;
                };
                let mut line = Vec::with_capacity(template.head.len() + template.tail.len() + 24);
                let (out, write_error) = (&mut self.out, &mut self.write_error);
                self.subscriptions.each_wanting(event, |id| {
                    if write_error.is_some() {
                        return;
                    }
                    line.clear();
                    line.extend_from_slice(&template.head);
                    // An id into a Vec: encoding cannot fail.
                    let _ = serde_json::to_writer(&mut line, id);
                    line.extend_from_slice(&template.tail);
                    line.push(b'\n');
                    if let Err(e) = out.write_all(&line) {
                        *write_error = Some(e);
                    }
                });
            }
        }
    }

    /// Ends every open subscription with its final result.
    ///
    /// Spec 2026-07-28 basic/patterns/subscriptions ("Graceful Closure"):
    /// a server that ends a subscription SHOULD answer the listen request
    /// with a completion result. basic/patterns/cancellation also says a
    /// server MUST send `notifications/cancelled` for a listen it tears
    /// down; that page's own rules say a cancellation may only name a
    /// request still in progress, which a listen stops being the moment
    /// its final result is written. So a graceful end sends the final
    /// result alone, as the official Python SDK and rmcp do.
    fn close_all_subscriptions(&mut self) {
        for id in self.subscriptions.drain() {
            self.write_final(&id);
        }
    }

    fn write_final(&mut self, id: &RequestId) {
        let mut line = Vec::with_capacity(160);
        encode_final(&mut line, id, &self.inner.info_value);
        self.write(&line);
    }

    fn server(&self) -> Server {
        Server {
            inner: Arc::clone(&self.inner),
        }
    }

    fn write_error_line(&mut self, id: Option<&RequestId>, error: &ErrorObject) {
        let mut line = Vec::with_capacity(128);
        encode_error(&mut line, id, error);
        self.write(&line);
    }

    fn write(&mut self, line: &[u8]) {
        self.write_line(|out| out.write_all(line));
    }

    fn write_reply(&mut self, reply: Reply) {
        self.write_line(|out| reply.write_to(out));
    }

    /// Writes one message with `body`, then its newline. After a failed
    /// write nothing more is written.
    fn write_line(&mut self, body: impl FnOnce(&mut dyn Write) -> io::Result<()>) {
        if self.write_error.is_some() {
            return;
        }
        let res = body(&mut self.out).and_then(|()| self.out.write_all(b"\n"));
        if let Err(e) = res {
            self.write_error = Some(e);
        }
    }

    fn flush(&mut self) {
        if self.write_error.is_none()
            && let Err(e) = self.out.flush()
        {
            self.write_error = Some(e);
        }
    }
}

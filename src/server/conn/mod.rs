//! The connection state: everything the spec's per-connection rules are
//! about, behind one lock. The in-flight map (which is the cancellation
//! map), the subscription table, the slots, and what is to be written to
//! the output. It knows one era: a legacy client's session and its asks
//! live in the legacy front end (`legacy::front`), which acts through
//! these same methods.
//!
//! Every thread that acts on a connection does so through
//! `ConnHandle::act` (`handle.rs`): the reader to begin requests, cancel
//! them and open subscriptions; a pool worker to answer its request; any
//! thread that publishes (`Notifier`) or sends a request's progress; the
//! thread in `serve` to shut down. Each rule of the protocol is kept by one
//! method here, which the others call; ARCHITECTURE.md ("Each rule in one
//! function") names them, with the test that fails without each.
//!
//! The methods write into the output's buffer as they go, so lines leave
//! in the order of the changes that wrote them; `act` sends them once the
//! lock is let go (`handle`). Nothing here does I/O.

pub(crate) mod handle;
mod output;

use std::sync::Arc;

use crossbeam_channel::Sender;
use serde_json::json;

use crate::jsonrpc::{ErrorObject, RequestId, encode_error};
use crate::server::Inner;
use crate::server::context::Holding;
use crate::server::event::ServerEvent;
use crate::server::in_flight::InFlight;
use crate::server::pool::Job;
use crate::server::reply::Reply;
#[cfg(feature = "http")]
use crate::server::subscriptions::Followers;
use crate::server::subscriptions::{
    Accepted, MAX_LISTENS_PER_TASK, SubscriptionTable, encode_ack, encode_final,
};
use output::{BACKLOG, Detached, Output};
pub(crate) use output::{LineKind, Writer};
#[cfg(feature = "http")]
pub(crate) use output::{LineWriter, Room};

/// Why serving a connection ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// The input ended (or failed).
    Eof,
    /// [`crate::StopHandle::stop`] was called.
    Stop,
    /// A write to the output failed: the client went away.
    OutputFailed,
}

/// One connection's state. Reached only through `ConnHandle::act` (and
/// `look`, to read it).
pub(crate) struct Conn {
    inner: Arc<Inner>,
    in_flight: InFlight,
    subscriptions: SubscriptionTable,
    /// The output: what the methods write goes into its buffer.
    output: Output,
    /// The lines written up to the last one whose send was left to the
    /// reader or the shutdown (`handle::Sending`):
    /// `ConnHandle::send_deferred` sends those. (Not the events held back
    /// for a client that is behind: those are `SubscriptionTable`'s.)
    deferred: u64,
    /// Where the end of serving is announced, to the thread in `serve`.
    end: Sender<End>,
    /// Pooled jobs that may start: `ConnHandle::act` hands them to the
    /// pool once the lock is let go, so that a worker woken on this CPU
    /// does not find it taken. Empty outside an `act`.
    ready: Vec<Job>,
    /// Shutting down: no request begins any more.
    stopping: bool,
    /// Shut down: nothing more is read or written (the last lines were
    /// the shutdown's own).
    closed: bool,
    /// A write failed: the client is gone.
    failed: bool,
    /// Threads waiting on a change (`ConnHandle::wait_until`, a writer
    /// waiting for a slow client): `act` wakes them, and each looks again
    /// at what it waits for.
    waiters: usize,
    /// A send is queued on the pool (`handle::Shared::queue_send`): a
    /// pooled finish leaves its lines to it.
    send_queued: bool,
    /// Lines handled so far: `serve` tells an idle spell by it.
    pub lines: u64,
}

impl Conn {
    fn new(inner: &Arc<Inner>, output: Writer, end: Sender<End>) -> Conn {
        Conn {
            inner: Arc::clone(inner),
            in_flight: InFlight::default(),
            subscriptions: SubscriptionTable::default(),
            output: Output::new(output),
            deferred: 0,
            end,
            ready: Vec::new(),
            stopping: false,
            closed: false,
            failed: false,
            waiters: 0,
            send_queued: false,
            lines: 0,
        }
    }

    /// Why a request with this id is refused (`ConnHandle::begin` asks
    /// before anything else): the server is shutting down, or the id is in
    /// use by a request in flight or an open subscription.
    pub fn refusal(&self, id: &RequestId) -> Option<ErrorObject> {
        if self.stopping {
            return Some(ErrorObject::internal_error("the server is shutting down"));
        }
        if self.in_flight.contains(id) || self.subscriptions.contains(id) {
            return Some(ErrorObject::invalid_request(format!(
                "request id {id} is already in use by a request in flight"
            )));
        }
        None
    }

    /// Answers request `id` (sequence `seq`) with `reply`, if it is still
    /// in flight, and takes it out in the same step: the one place that
    /// makes "a cancelled request gets nothing" and "no request gets two
    /// replies" true.
    pub fn finish(&mut self, id: &RequestId, seq: u64, reply: Reply) {
        if self.in_flight.take(id, seq).is_some() {
            self.write_reply(reply);
            self.start_queued();
        }
    }

    /// Writes a message of request `id` (sequence `seq`: its progress, its
    /// logs, a legacy front end's asks for it) if the request is still in
    /// flight; returns whether it did.
    pub fn notify(&mut self, id: &RequestId, seq: u64, line: Vec<u8>) -> bool {
        let current = self.in_flight.is_current(id, seq);
        if current {
            self.write_line(line, LineKind::Message);
        }
        current
    }

    /// Request `id` (sequence `seq`), running on the pool, gives up its
    /// slot while it waits (`RequestContext::wait_without_slot`), unless
    /// `max_running` requests wait so already; a queued request may start.
    pub fn stop_holding(&mut self, id: &RequestId, seq: u64) -> Holding {
        let max = self.inner.config.max_running;
        if self.in_flight.stop_holding(id, seq, max) {
            self.start_queued();
            Holding::Released
        } else if self.in_flight.waiting() >= max && self.in_flight.is_running(id, seq) {
            Holding::Full
        } else {
            Holding::NoSlot
        }
    }

    /// Request `id` (sequence `seq`) is done waiting: it holds a slot
    /// again.
    pub fn hold_again(&mut self, id: &RequestId, seq: u64) {
        self.in_flight.hold_again(id, seq);
    }

    /// `notifications/cancelled` for `id`: the request leaves the map
    /// before its token trips, so whatever its handler does next writes
    /// nothing (spec 2026-07-28 basic/patterns/cancellation: no further
    /// messages for it). A cancelled listen ends without a final result.
    /// Unknown ids are ignored. Returns whether a request in flight was
    /// cancelled.
    pub fn cancel(&mut self, id: &RequestId) -> bool {
        if let Some(entry) = self.in_flight.remove(id) {
            entry.token.cancel();
            self.start_queued();
            true
        } else {
            // From here on nothing carries its subscription id.
            self.subscriptions.remove(id);
            false
        }
    }

    /// `subscriptions/listen`: the subscription opens and its
    /// acknowledgment is written in one step (spec 2026-07-28
    /// basic/patterns/subscriptions: the ack is the first message carrying
    /// its id), unless the connection holds its maximum already. A task
    /// past [`MAX_LISTENS_PER_TASK`] is left out, as an unknown one is; a
    /// listen left with nothing to hear is refused, with the limit
    /// (`SubscriptionTable::open`, `Followers::follow`).
    pub fn listen(&mut self, id: RequestId, accepted: Accepted) {
        let max = self.inner.config.max_subscriptions;
        if self.subscriptions.len() >= max {
            let error = ErrorObject::internal_error(format!(
                "too many open subscriptions on this connection (at most {max}): cancel one first"
            ))
            .with_data(json!({ "limit": max }));
            return self.write_error(Some(&id), &error);
        }
        let mut line = Vec::with_capacity(160);
        match self.subscriptions.open(id.clone(), accepted) {
            Ok(accepted) => encode_ack(&mut line, &id, accepted),
            Err(task) => {
                let error = ErrorObject::internal_error(format!(
                    "task {task} is followed by {MAX_LISTENS_PER_TASK} open subscriptions already: end one first"
                ))
                .with_data(json!({ "limit": MAX_LISTENS_PER_TASK }));
                return self.write_error(Some(&id), &error);
            }
        }
        self.write_line(line, LineKind::Message);
    }

    /// Counts the tasks this connection's listens follow with the other
    /// connections of `followers` (over HTTP, a listener's POSTs: each
    /// listen is a connection of its own there).
    #[cfg(feature = "http")]
    pub fn share_followers(&mut self, followers: &Followers) {
        self.subscriptions.share_followers(followers);
    }

    /// Delivers a published event to every subscription that asked for it
    /// (spec 2026-07-28 basic/patterns/subscriptions: nothing a client did
    /// not ask for), tagged with its id, or closes subscriptions. While more
    /// than [`BACKLOG`] waits to be sent, events are held back instead, the
    /// latest about each thing (`SubscriptionTable::deliver`), and go out
    /// before the next line written or at the end of the send that leaves
    /// no more than that waiting ([`Conn::write_held`]): a publisher waits
    /// for a client that is behind only while more than [`BACKLOG`] is held
    /// ([`Conn::publisher_waits`]).
    pub fn publish(&mut self, event: &ServerEvent) {
        match event {
            ServerEvent::CloseAll => self.close_subscriptions(),
            ServerEvent::Close(id) => {
                self.write_held();
                if self.subscriptions.remove(id) {
                    self.write_final(id);
                }
            }
            _ => {
                let hold = self.output.waiting() > BACKLOG || self.subscriptions.holds();
                let output = &mut self.output;
                (self.subscriptions).deliver(event, hold, |line| {
                    output.write_line(LineKind::Event, |out| {
                        out.push(line);
                        Ok(())
                    });
                });
            }
        }
    }

    /// Writes the events held back for a client that was behind (see
    /// [`Conn::publish`]), before any other line.
    fn write_held(&mut self) {
        if !self.subscriptions.holds() {
            return;
        }
        for line in self.subscriptions.take_held() {
            self.output.push_released(line);
        }
    }

    /// Whether a publisher waits for the client: more than [`BACKLOG`] of
    /// events is held back for it, or was and is written and not yet taken
    /// by a send (`Shared::send_in_background`). What is held is written
    /// before any other line, whatever waits ([`Conn::write_held`]):
    /// counted held alone, each pooled reply to a client that reads
    /// nothing let a publisher of events about many things add another
    /// megabyte
    /// (`subscriptions::replies_that_write_what_was_held_let_no_publisher_pile_events_behind_a_client_that_reads_nothing`).
    /// Other lines waiting do not count: a large reply to a client slow
    /// to read holds up no publisher of the same changes.
    pub fn publisher_waits(&self) -> bool {
        let events = self.subscriptions.held_bytes() + self.output.released();
        events > BACKLOG && !self.failed && !self.closed
    }

    /// Ends every open subscription with its final result, oldest first.
    ///
    /// Spec 2026-07-28 basic/patterns/subscriptions ("Graceful Closure"):
    /// a server that ends a subscription SHOULD answer the listen request
    /// with a completion result. basic/patterns/cancellation also says a
    /// server MUST send `notifications/cancelled` for a listen it tears
    /// down; that page's own rules say a cancellation may only name a
    /// request still in progress, which a listen stops being the moment
    /// its final result is written. So a graceful end sends the final
    /// result alone, as the official Python SDK and rmcp do.
    fn close_subscriptions(&mut self) {
        self.write_held();
        for id in self.subscriptions.drain() {
            self.write_final(&id);
        }
    }

    fn write_final(&mut self, id: &RequestId) {
        let mut line = Vec::with_capacity(160);
        encode_final(&mut line, id, &self.inner.info_value);
        self.write_line(line, LineKind::Response { error: None });
    }

    /// Writes an error response (for a request that never began, or a
    /// line that is not one).
    pub fn write_error(&mut self, id: Option<&RequestId>, error: &ErrorObject) {
        let mut line = Vec::with_capacity(128);
        encode_error(&mut line, id, error);
        let kind = LineKind::Response {
            error: Some(error.code),
        };
        self.write_line(line, kind);
    }

    /// Whether the reader waits before it reads another line after a
    /// pooled request (`ConnHandle::begin`): the queue for slots is full,
    /// or more than [`BACKLOG`] bytes wait behind the send in progress. A
    /// pooled request's finish never waits for the client (its thread
    /// would look blocked to the pool), so this is what holds the replies
    /// of a client that writes requests and reads slower than they are
    /// answered: at most [`BACKLOG`] and the replies of the requests
    /// running when the reader stopped waiting, besides what the send in
    /// progress holds (up to as much again: it took all that waited).
    pub fn backed_up(&self) -> bool {
        let config = &self.inner.config;
        let queue_full = (self.in_flight).queue_full(config.queue_limit, config.queue_bytes);
        (queue_full || self.output.waiting() > BACKLOG) && !self.closed
    }

    /// Nothing is in flight any more, or nothing more can be written.
    pub fn settled(&self) -> bool {
        self.in_flight.is_empty() || self.failed || self.closed
    }

    /// The end of input or a stop: no new request begins, and every
    /// subscription gets its final result. Requests in flight go on (see
    /// [`Conn::close`]).
    pub fn begin_shutdown(&mut self) {
        if self.stopping {
            return;
        }
        self.stopping = true;
        self.close_subscriptions();
    }

    /// The end: what is still in flight is cancelled and answered with
    /// `-32603` (every request gets exactly one reply), and the output is
    /// closed once they are written (see `ConnHandle::shut_down`).
    pub fn close(&mut self) {
        self.begin_shutdown();
        for (id, entry) in self.in_flight.drain() {
            entry.token.cancel();
            let error =
                ErrorObject::internal_error("the server shut down before the request finished");
            self.write_error(Some(&id), &error);
        }
        // Nothing more is written from here on (`write_reply`).
        self.closed = true;
    }

    /// Writes one encoded message (without its newline), which is `kind`
    /// (for a writer that is told, `output::Writer::Lines`), and answers
    /// no request in flight: an error for a line that is not one, a front
    /// end's own answers and notifications.
    pub fn write_line(&mut self, line: Vec<u8>, kind: LineKind) {
        self.write_held();
        if !self.closed {
            self.output.push_line(kind, line);
        }
    }

    /// Writes one reply ([`Output::write_line`], the only writer; an
    /// encoded one is moved in, [`Output::push_line`]), a response.
    fn write_reply(&mut self, reply: Reply) {
        if self.closed {
            return;
        }
        self.write_held();
        let kind = LineKind::Response {
            error: reply.error_code(),
        };
        match reply {
            Reply::Line { line, .. } => self.output.push_line(kind, line),
            reply => self.output.write_line(kind, |out| reply.write_to(out)),
        }
    }

    /// The client took less than 16 KiB of a send in progress in the write
    /// timeout (`ServerBuilder::write_timeout`; the rule:
    /// `Shared::let_go_if_stalled`): it is taken to be gone, as if a send
    /// had failed. What waits is dropped, nothing more is written, serving
    /// ends, and `serve` returns the reason. Returns the writer if no send
    /// has it, to be dropped without the lock.
    fn let_go(&mut self) -> Option<Writer> {
        let reason = std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!(
                "the client took less than 16 KiB of the server's output in {:?} while a send waited on it: it was taken to be gone (a client must read the server's output as it comes)",
                self.inner.config.write_timeout,
            ),
        );
        let writer = self.output.give_up(reason);
        self.fail();
        writer
    }

    /// A send failed: the client is gone, and serving ends.
    fn fail(&mut self) {
        self.failed = true;
        let _ = self.end.send(End::OutputFailed);
    }

    /// Starts queued requests while slots are free, unless more than
    /// [`BACKLOG`] waits to be sent: their replies would pile up behind a
    /// client that does not read. They start at the end of a send that
    /// leaves no more than that waiting ([`Conn::sent`]), or at a later
    /// finish.
    fn start_queued(&mut self) {
        if self.output.waiting() > BACKLOG {
            return;
        }
        while let Some(job) = self.in_flight.next_to_start(self.inner.config.max_running) {
            self.ready.push(job);
        }
    }

    /// A send of what was written is over (`handle`): the output takes its
    /// writer back, a failed send ends serving, and once no more than
    /// [`BACKLOG`] waits, the events held back go out and queued requests
    /// may start. Returns whether more waits to be sent, and the writer of an
    /// output closed meanwhile, to be dropped without the lock
    /// ([`Output::attach`]).
    fn sent(&mut self, detached: Detached, sent: std::io::Result<()>) -> (bool, Option<Writer>) {
        let (failed, orphan) = self.output.attach(detached, sent);
        if failed {
            self.fail();
        }
        if self.output.waiting() <= BACKLOG {
            self.write_held();
        }
        self.start_queued();
        (self.output.waiting() > 0, orphan)
    }

    /// Whether a pooled request read now may start at once: none waits in
    /// the queue before it (one queued for the backlog, with a slot free,
    /// is not overtaken: the queue is first come, first served), a slot
    /// is free, and no more than [`BACKLOG`] waits to be sent
    /// ([`Conn::start_queued`]).
    pub fn may_start(&self) -> bool {
        !self.in_flight.any_queued()
            && self.in_flight.has_slot(self.inner.config.max_running)
            && self.output.waiting() <= BACKLOG
    }
}

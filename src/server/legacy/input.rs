//! Input from a legacy client: a handler that returns
//! [`Outcome::InputRequired`](crate::Outcome::InputRequired) serves a legacy
//! (initialize-era) client too. A legacy client cannot answer a multi
//! round-trip result, but its era lets the server ask: the server sends
//! each input request (`elicitation/create`, `sampling/createMessage`,
//! `roots/list`) to the client as a request of its own (spec 2025-11-25
//! client/elicitation, client/sampling, client/roots), waits for the
//! answers, and runs the handler again with them as `inputResponses` and
//! the sealed `requestState` it returned, exactly as a modern client's
//! retry would. The handler cannot tell the eras apart.
//!
//! Spec 2026-07-28 basic/versioning, compatibility matrix: a legacy client
//! with a dual-era server "Works. The server answers `initialize` and serves
//! the client according to the negotiated legacy revision."
//!
//! The asks go out through the connection's asks (`legacy::asks`), which
//! write them only while the request is in flight and get the client's
//! answers back by id. With its first ask the request gives up its slot
//! until the answers are in (`Asks::ask`, `Conn::stop_holding`): the
//! answers are behind the requests queued after it in the input, and must
//! be read; past `max_running` requests waiting so, an ask is refused. While
//! waiting, the request can still be cancelled: its open asks are then
//! cancelled at the client with `notifications/cancelled` and dropped,
//! which ends the wait here at once. A client that answers an ask with an error ends the
//! request with that error; one that does not answer within the server's
//! `ask_timeout` has its asks cancelled, and the request ends with an
//! error that says so. Nothing is asked between a session's `initialize`
//! and its `notifications/initialized` (2025-11-25 basic/lifecycle): the
//! request ends with `-32600`, which says to send it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Select};
use serde_json::{Map, Value};

use crate::incoming::Params;
use crate::jsonrpc::{ErrorObject, RequestId, encode_error, encode_request, error_code};
use crate::server::Inner;
use crate::server::context::{RequestContext, Sink};
use crate::server::dispatch::{Prepared, prepare};
use crate::server::legacy::asks::{AskFailed, AskReply, Asks};
use crate::server::legacy::downgrade::{downgraded, unstamped_or_line};
use crate::server::legacy::session::LegacySession;
use crate::server::reply::Reply;
use crate::server::work::{Work, call};
use crate::types::method;

/// How many times one request may ask before it gives up (the client's
/// own default for multi round-trip requests is the same).
const MAX_ROUNDS: usize = 8;

/// Whether a request of `method` may need input from the client.
pub(crate) fn may_ask(method: &str) -> bool {
    matches!(
        method,
        method::TOOLS_CALL | method::PROMPTS_GET | method::RESOURCES_READ
    )
}

/// What the wrapper of a legacy request that may ask needs: the request
/// as sent, its session, and its connection's asks.
pub(crate) struct Bridge {
    pub inner: Arc<Inner>,
    pub method: String,
    pub params: String,
    pub session: Arc<LegacySession>,
    pub asks: Arc<Asks>,
}

impl Bridge {
    /// Wraps the work of a legacy request: asks the client for whatever
    /// the handler needs, runs the handler again with the answers, and
    /// finally drops what only 2026-07-28 results carry.
    pub fn wrap(self, work: Work) -> Work {
        Box::new(move |ctx| match unstamped_or_line(work(ctx)) {
            Ok(complete) => complete,
            Err(line) => self.rounds(ctx, line),
        })
    }

    /// Wraps the work of an inline legacy request, which runs on the
    /// reader: its first round's reply for the client, or, when the
    /// handler needs input, the rest (asking, waiting for the answers,
    /// running the handler again) handed back to run on the pool
    /// (`Reply::Later`): it waits for answers that only the reader reads.
    pub fn wrap_inline(self, work: Work) -> Work {
        Box::new(move |ctx| match unstamped_or_line(work(ctx)) {
            Ok(complete) => complete,
            Err(line) if input_required(&line).is_none() => {
                downgraded(line, &self.method, &self.session.version)
            }
            Err(line) => Reply::Later(Box::new(move |ctx| self.rounds(ctx, line))),
        })
    }

    /// Asks and runs the handler again while its reply (`line`) requires
    /// input, then makes the last reply a legacy one.
    fn rounds(&self, ctx: &RequestContext, mut line: Vec<u8>) -> Reply {
        let mut rounds = 0;
        while let Some(input) = input_required(&line) {
            if rounds == MAX_ROUNDS {
                break;
            }
            rounds += 1;
            line = match self.ask_and_retry(ctx, input) {
                Ok(line) => line,
                Err(error) => {
                    let mut line = Vec::with_capacity(128);
                    encode_error(&mut line, Some(ctx.id()), &error);
                    line
                }
            };
        }
        downgraded(line, &self.method, &self.session.version)
    }

    /// One round: every ask sent at once, every answer awaited, then the
    /// handler run again as a retry with the answers.
    fn ask_and_retry(
        &self,
        ctx: &RequestContext,
        input: InputRequired,
    ) -> Result<Vec<u8>, ErrorObject> {
        let timeout = self.inner.config.ask_timeout;
        let version = &self.session.version;
        let max_running = self.inner.config.max_running;
        let answers = ask(
            &self.asks,
            ctx,
            input.requests,
            version,
            timeout,
            max_running,
        )?;
        let mut retry: Map<String, Value> =
            serde_json::from_str(&self.params).map_err(ErrorObject::internal_error)?;
        retry.insert("inputResponses".into(), Value::Object(answers));
        match input.state {
            Some(state) => retry.insert("requestState".into(), state),
            None => retry.remove("requestState"),
        };
        let retry = serde_json::value::to_raw_value(&retry).map_err(ErrorObject::internal_error)?;
        // The answers are checked like a modern retry's; the message names
        // what this client did (it sent answers, not `inputResponses`).
        let mut meta = self.session.meta(ctx.meta().progress_token.clone());
        meta.token = ctx.meta().token.clone();
        let prepared = prepare(
            &self.inner,
            &self.method,
            Some(Params::Raw(retry)),
            Some(meta),
        );
        let runnable = match prepared.map_err(|error| {
            if error.code == error_code::INVALID_PARAMS {
                ErrorObject::invalid_params(format!(
                    "the client's answer does not fit what it was asked: {}",
                    error.message
                ))
            } else {
                error
            }
        })? {
            Prepared::Run(runnable) => runnable,
            Prepared::Listen(_) => {
                return Err(ErrorObject::internal_error(
                    "a retry of a legacy request did not prepare a runnable request",
                ));
            }
        };
        let ctx = ctx.for_retry(runnable.meta, runnable.retry);
        Ok(call(runnable.work, &ctx).into_line())
    }
}

/// The `inputRequests` and `requestState` of an `input_required` reply.
struct InputRequired {
    requests: Map<String, Value>,
    state: Option<Value>,
}

fn input_required(line: &[u8]) -> Option<InputRequired> {
    // The common case, a complete result, is told without parsing.
    const MARK: &[u8] = b"\"input_required\"";
    if !line.windows(MARK.len()).any(|w| w == MARK) {
        return None;
    }
    let mut reply: Value = serde_json::from_slice(line).ok()?;
    let result = reply.get_mut("result")?.as_object_mut()?;
    if result.get("resultType")? != "input_required" {
        return None;
    }
    let requests = match result.remove("inputRequests")? {
        Value::Object(requests) => requests,
        _ => return None,
    };
    Some(InputRequired {
        requests,
        state: result.remove("requestState"),
    })
}

/// Cancels the asks still `open` at the client, and passes `error` on.
fn withdraw(asks: &Asks, open: &[OpenAsk], error: ErrorObject) -> ErrorObject {
    let ids: Vec<RequestId> = open.iter().map(|(_, id, _)| id.clone()).collect();
    asks.withdraw(&ids);
    error
}

/// One ask the client has not answered yet: its input request's key, the
/// id it went out with, and where its answer arrives.
type OpenAsk = (String, RequestId, Receiver<AskReply>);

/// Sends every input request to the client and waits (at most `timeout`)
/// for all the answers, keyed like the requests; refused when `max_running`
/// requests wait for this client's answers already.
fn ask(
    asks: &Asks,
    ctx: &RequestContext,
    requests: Map<String, Value>,
    version: &str,
    timeout: Duration,
    max_running: usize,
) -> Result<Map<String, Value>, ErrorObject> {
    let Sink::Conn { seq, .. } = ctx.sink() else {
        return Err(ErrorObject::internal_error(
            "only a request of a connection can ask its client",
        ));
    };
    let mut open = Vec::new();
    let mut released = false;
    for (key, request) in requests {
        let sent = ask_line(&key, request, version).and_then(|(id, line)| {
            // The first ask gives up the request's slot, in the step that
            // writes it.
            let first = open.is_empty();
            match asks.ask(ctx.id(), *seq, id.clone(), line, first) {
                Ok((answer, gave_up)) => {
                    released |= gave_up;
                    Ok((id, answer))
                }
                Err(AskFailed::Client(error)) => Err(error),
                Err(AskFailed::Full) => Err(ErrorObject::internal_error(format!(
                    "too many requests already wait for this client's answers (at most {})",
                    max_running
                ))),
                Err(AskFailed::Closed) => Err(ended(ctx)),
                Err(AskFailed::NotInitialized) => Err(ErrorObject::invalid_request(
                    "the server asks a client for input only once it sent notifications/initialized (2025-11-25 basic/lifecycle): send it after the initialize answer, then the request again",
                )),
            }
        });
        match sent {
            Ok((id, answer)) => open.push((key, id, answer)),
            Err(error) => {
                let error = withdraw(asks, &open, error);
                if released {
                    asks.hold_again(ctx.id(), *seq);
                }
                return Err(error);
            }
        }
    }
    let answers = await_answers(ctx, asks, open, timeout);
    if released {
        asks.hold_again(ctx.id(), *seq);
    }
    answers
}

/// One input request as a request of the server's own to the client, in
/// the shape the client's `version` knows: its id and its line.
fn ask_line(
    key: &str,
    mut request: Value,
    version: &str,
) -> Result<(RequestId, Vec<u8>), ErrorObject> {
    static NEXT_ASK: AtomicU64 = AtomicU64::new(1);
    // Elicitation had no `mode` before 2025-11-25: a form is all there was.
    if version < "2025-11-25"
        && let Some(params) = request["params"].as_object_mut()
        && params.get("mode").is_some_and(|mode| mode == "form")
    {
        params.remove("mode");
    }
    // JSON-RPC 2.0: params, when present, are an object.
    let params = match request.get_mut("params").map(Value::take) {
        Some(Value::Object(params)) => Value::Object(params),
        _ => Value::Object(Map::new()),
    };
    let Some(ask_method) = request["method"].as_str() else {
        return Err(ErrorObject::internal_error(format!(
            "input request {key} has no method"
        )));
    };
    let id = RequestId::String(format!(
        "mcp-stdio-ask-{}",
        NEXT_ASK.fetch_add(1, Ordering::Relaxed)
    ));
    let line = encode_request(&id, ask_method, &params).map_err(ErrorObject::internal_error)?;
    Ok((id, line))
}

/// The error of a request whose `open` asks the client left unanswered
/// for `timeout`.
fn unanswered(open: &[OpenAsk], timeout: Duration) -> ErrorObject {
    let asks: Vec<String> = open
        .iter()
        .map(|(key, id, _)| format!("{id} ({key})"))
        .collect();
    let requests = if asks.len() == 1 {
        "request"
    } else {
        "requests"
    };
    ErrorObject::internal_error(format!(
        "the client did not answer the server's {requests} {} within {timeout:?}, so the server gave up: answer the server's requests sooner, or give them longer with ServerBuilder::ask_timeout",
        asks.join(", ")
    ))
}

/// The error of a request whose asks ended unanswered: it was cancelled
/// (nothing is sent for it then), or its connection is closing.
fn ended(ctx: &RequestContext) -> ErrorObject {
    if ctx.is_cancelled() {
        ErrorObject::internal_error("cancelled")
    } else {
        ErrorObject::internal_error("the connection closed before the client answered")
    }
}

/// Waits for the answers to the `open` asks. They are taken as they come,
/// in any order, so an error ends the request at once (and withdraws the
/// asks still open). A cancellation or the connection's end drops the
/// asks, which ends the wait; so does `timeout`, which withdraws them.
fn await_answers(
    ctx: &RequestContext,
    asks: &Asks,
    mut open: Vec<OpenAsk>,
    timeout: Duration,
) -> Result<Map<String, Value>, ErrorObject> {
    let deadline = Instant::now().checked_add(timeout);
    let mut answers = Map::new();
    while !open.is_empty() {
        let mut select = Select::new();
        for (_, _, answer) in &open {
            select.recv(answer);
        }
        let ready = match deadline.map(|at| select.select_deadline(at)) {
            None => select.select(),
            Some(Ok(ready)) => ready,
            Some(Err(_)) => return Err(withdraw(asks, &open, unanswered(&open, timeout))),
        };
        let at = ready.index();
        let Ok(reply) = ready.recv(&open[at].2) else {
            open.swap_remove(at);
            return Err(withdraw(asks, &open, ended(ctx)));
        };
        let (key, _, _) = open.swap_remove(at);
        let value = match reply {
            Ok(value) => value,
            Err(AskFailed::Client(error)) => {
                let error = ErrorObject {
                    message: format!("the client answered {key} with an error: {}", error.message),
                    ..error
                };
                return Err(withdraw(asks, &open, error));
            }
            Err(AskFailed::Closed | AskFailed::Full | AskFailed::NotInitialized) => {
                return Err(withdraw(asks, &open, ended(ctx)));
            }
        };
        let value = serde_json::from_str(value.get()).map_err(ErrorObject::internal_error)?;
        answers.insert(key, value);
    }
    Ok(answers)
}

//! A [`Server`] that serves what another server offers, through one
//! [`Client`]: `mcp-stdio serve-http -- CMD` is this over HTTP, so that any
//! stdio server (modern or legacy) is reached by HTTP clients of both eras
//! through one child process.
//!
//! What is passed through, and how:
//!
//! - **Capabilities.** The proxy claims what the server declares now, no
//!   more (`ServerBuilder::capabilities_at_most`, asked each time: a
//!   server the client restarted may declare less than the first): a list
//!   change, a resource subscription or logging the server does not
//!   declare is not advertised, is left out of a listen's acknowledgment,
//!   and a legacy caller's `resources/subscribe` or `logging/setLevel` for
//!   it is `-32601`. Completion, if the first server did not declare
//!   it, is not offered, whatever a restarted one declares.
//! - **Lists.** The server's tools, resources, resource templates and
//!   prompts are mirrored as they are (schemas byte for byte), with
//!   `completion/complete` when the server offers it. A list change the
//!   server announces (on the one `listen` the proxy keeps open) makes the
//!   proxy list again and publish the change to its own listeners, even
//!   when the list it fetches looks the same (the server said it changed:
//!   an item's handler, or what it returns, may be what changed); so does
//!   a restart of the server (the listen sent again, or refused by the
//!   restarted server; one that died before it acknowledged the listen
//!   gets it again once restarted, and one that died during the first
//!   listing is listed once restarted), after which a list the server no
//!   longer declares is emptied. The lists are listed once that listen is
//!   acknowledged (a change before it was heard by nobody); a listing
//!   that fails is tried again a few times, with a growing wait, its
//!   change published once (one that cannot pass, a list whose pages
//!   never end, only with the next change); a listen that overflowed (a flood of changes)
//!   is sent again (`lists::follow_list_changes`). That listen is how a restart is heard: behind a first
//!   server that declared no list changes, the lists stay the first's
//!   after a restart.
//! - **Calls.** Each `tools/call`, `resources/read`, `prompts/get` and
//!   `completion/complete` is one request to the server, with the caller's
//!   client capabilities; the server's progress goes back to the caller
//!   (not its log messages: on stdio one names no request, so none is
//!   given to a caller, whose log level does not go on; a server may log
//!   late or where it was not asked, and one caller must never read
//!   another's), and a caller that cancels (or closes
//!   its HTTP stream) cancels the server's request
//!   ([`PendingCall::wait_unless`](crate::PendingCall::wait_unless)).
//! - **Multi round-trip.** A modern server's `input_required` result goes
//!   back to the caller with its `inputRequests`, its own `requestState`
//!   kept inside the proxy's sealed state; the caller's retry goes on to
//!   the server with the answers and that state. A legacy caller is asked
//!   through its own era's requests by the proxy's server, as for any
//!   handler. A legacy server's own requests (elicitation, sampling, roots)
//!   are not passed on: on stdio they name no request, so no caller could
//!   be chosen to ask; the proxy declares none of those capabilities to
//!   it, so a well-behaved one does not ask.
//! - **Subscriptions.** A caller's `resourceSubscriptions` (or legacy
//!   `resources/subscribe`) make the proxy subscribe to that URI on the
//!   server before the caller's is acknowledged (once per URI, kept while
//!   a caller's subscription names it, at most 1,000 URIs: past them a
//!   new URI is not acknowledged; one no caller names any more leaves
//!   when a new one needs the room) and publish each update it hears, all of them from
//!   one thread. The caller's is acknowledged only for a URI the server
//!   acknowledged (a legacy caller's refused `-32002`).
//!
//! - **Tasks.** When the server declares the Tasks extension, so does
//!   the proxy, and each of its tools may run as a task of the proxy's
//!   (`TaskMode::Optional`: the spec makes the server the sole decider of
//!   which call becomes a task, so the proxy cannot know which the server
//!   would make one). A caller that declares the extension gets a task of
//!   the proxy's for each call, whose work is the call to the server with
//!   the caller's capabilities: a task the server makes of it is followed
//!   to its end (`follow_task`: `tasks/get` at its poll interval, the
//!   input it asks for asked of the caller through the proxy's task,
//!   `tasks/cancel` when the caller cancels, a request behind fails, or
//!   the proxy stops: its tasks live in its memory, and a stop is final,
//!   so nobody could take the result; `Server::at_stop` holds that
//!   `tasks/cancel` while the task is followed). A `tools/call` whose
//!   answer, a task, crosses the caller's cancellation on the wire has
//!   that task cancelled too: the call's late reply is heard until the
//!   client's request timeout from the give-up
//!   (`PendingCall::on_late_reply`, the rule in `Link::forget_but_hear`).
//!   No `tasks/cancel` is waited for. A task behind lives in the server
//!   process that made it: once that process is gone (exited, and maybe
//!   restarted by the client), the proxy's task fails saying so, and the
//!   old task id is never sent to the new process (`follow_task`). A
//!   caller that does not declare the extension gets the answer at once,
//!   or the server's `-32021` for a tool it runs only as a task. Task ids are the proxy's: a caller
//!   never sees the server's.
//!
//! Not passed through: the server's log messages (see **Calls**), and its
//! extensions other than tasks.
//!
//! Requests of many callers share the one client, whose ids keep them
//! apart (a proxy is a client like any other to the server). The proxy
//! keeps its client, and so the server's process, for as long as the
//! process that built it runs: it is made for a gateway's whole life. To
//! end the server behind once serving is over, keep a handle of your own:
//! give [`serve_as`] an `Arc<Client>` and call
//! [`Client::close_shared`] on it.

mod forward;
mod lists;
mod updates;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::client::{Client, Link, RequestOptions};
use crate::error::Error;
use crate::jsonrpc::ErrorObject;
use crate::key_hashes::KeyHashes;
use crate::outcome::Outcome;
use crate::server::Server;
use crate::server::context::RequestContext;
use crate::types::{
    CompleteRequestParams, CompleteResult, GetTaskResult, InputRequests, JsonObject,
    ServerCapabilities, TASKS_EXTENSION, Task, TaskStatus, method,
};

use forward::forward;
use lists::{Mirrored, follow_list_changes};
use updates::{Updates, subscribe};
/// Builds a server that serves what `client`'s server offers (module
/// docs): named and described as that server, with its lists mirrored,
/// and kept up to date while it runs. Serve it as any other:
/// `Server::serve_http` (feature `http`), [`Server::serve`]. `client` is a
/// [`Client`], or an `Arc<Client>` of which you keep a clone (to close it
/// once serving is over).
///
/// It returns once every list is listed, after the server acknowledged
/// the proxy's listen for its list changes (when it declares any): a
/// server that does not answer that listen holds it up to the client's
/// request timeout (its lists are then listed, and not followed). A
/// server that dies before it acknowledges the listen, or during the
/// first listing after it, lets it return at once, with nothing mirrored
/// yet when the client restarts it (the lists come once the restarted
/// server acknowledges the listen, as often as the restart policy starts
/// one), and with the listen's or the listing's error when no restart
/// follows. A list that fails to list (its pages never end, the server
/// answers an error) is its error.
///
/// ```no_run
/// # #[cfg(feature = "http")] fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use mcp_stdio::{Client, HttpOptions};
///
/// let client = Client::spawn(std::process::Command::new("my-mcp-server"))?;
/// let server = mcp_stdio::proxy::serve_as(client)?;
/// let listener = std::net::TcpListener::bind("127.0.0.1:8080")?;
/// server.serve_http(listener, HttpOptions::new())?;
/// # Ok(()) }
/// # #[cfg(not(feature = "http"))] fn main() {}
/// ```
pub fn serve_as(client: impl Into<Arc<Client>>) -> Result<Server, Error> {
    let client: Arc<Client> = client.into();
    // Its requests are many callers': no caller reads another's logs.
    client.serve_many_callers();
    let (name, version) = client
        .server_info()
        .map_or(("proxy".to_owned(), "0".to_owned()), |i| {
            (i.name, i.version)
        });
    let capabilities = client.server_capabilities();
    // What the server behind declares now, no more (spec 2026-07-28
    // basic/patterns/subscriptions: "Notification types the server does
    // not support are omitted"): its list changes, subscriptions, logging
    // and the Tasks extension; not its other extensions or experimental
    // capabilities, which the proxy does not pass through. Read from the
    // client each time: a restarted server may declare less than the
    // first one did.
    let declared = Arc::clone(&client);
    let mut builder = Server::builder(&name, &version).capabilities_at_most(move || {
        let capabilities = declared.server_capabilities();
        ServerCapabilities {
            experimental: None,
            extensions: tasks_of(&capabilities),
            ..capabilities
        }
    });
    if let Some(text) = client.instructions() {
        builder = builder.instructions(&text);
    }
    if capabilities.tools.is_some() {
        builder = builder.enable_tools();
    }
    if capabilities.resources.is_some() {
        builder = builder.enable_resources();
    }
    if capabilities.prompts.is_some() {
        builder = builder.enable_prompts();
    }
    let updates = Arc::new(Updates::default());
    if capabilities.completions.is_some() {
        let (forwarding, updates) = (Arc::clone(&client), Arc::clone(&updates));
        builder = builder.completion(move |ctx, params: CompleteRequestParams| {
            let params = serde_json::to_value(params).map_err(internal)?;
            let method = method::COMPLETION_COMPLETE;
            match forward::<CompleteResult>(&forwarding, &updates, ctx, method, params)? {
                Outcome::Complete(result) => Ok(result),
                Outcome::InputRequired(_) => Err(ErrorObject::internal_error(
                    "the server behind this proxy asked for input to complete an argument",
                )),
            }
        });
    }
    let subscribed = Arc::clone(&updates.subscribed);
    let server_slot: Arc<Mutex<Option<Server>>> = Arc::default();
    // Always set: asked only while the server behind declares
    // subscriptions (the ceiling), which a restarted one may do when the
    // first did not; without it every URI would be acknowledged, and
    // nothing subscribed behind.
    {
        let (client, subscribed, slot, updates) = (
            Arc::clone(&client),
            Arc::clone(&subscribed),
            Arc::clone(&server_slot),
            Arc::clone(&updates),
        );
        builder = builder.resource_subscription_hold(move |uri| {
            subscribe(&client, &subscribed, &slot, &updates, uri)
        });
    }
    let server = builder.build();
    *lock(&server_slot) = Some(server.clone());
    let mirrored = Arc::new(Mutex::new(Mirrored::default()));
    // Listed once the listen that follows the lists is acknowledged: a
    // change after the listing is heard.
    follow_list_changes(&server, &client, updates, mirrored)?;
    Ok(server)
}

/// The Tasks extension, when `capabilities` declare it: the only
/// extension the proxy passes through.
fn tasks_of(capabilities: &ServerCapabilities) -> Option<JsonObject> {
    let settings = capabilities.extensions.as_ref()?.get(TASKS_EXTENSION)?;
    Some(JsonObject::from_iter([(
        TASKS_EXTENSION.to_owned(),
        settings.clone(),
    )]))
}

/// A task the server made of a call (it may, to a caller that declares
/// the extension, whose capabilities the call carried), followed to its
/// end on the caller's behalf inside the proxy's own task (spec
/// extensions/tasks, "Task Polling", "Task Update Requests"): `tasks/get`
/// at the server's poll interval (kept between 10 ms and 10 s; 1 s when
/// it names none), each of its input requests asked of the caller once
/// ([`RequestContext::ask`]) and the answers sent with `tasks/update`, and
/// `tasks/cancel` once the caller cancels (a request behind in progress
/// given up on at once), a request behind fails, or the proxy stops.
/// Every request carries `stamp`,
/// the caller's capabilities (the server refuses a task method whose
/// request does not declare the extension). The task's result, as the
/// call would have returned it; its error when it failed.
///
/// The stop: the proxy's tasks live in its own memory and a stop is
/// final, so once it stops nobody can take the result of the task behind
/// (spec extensions/tasks, "Task Polling": a client polls until the task
/// ends or it sends `tasks/cancel`). `Server::at_stop` holds, while the
/// task is followed, the work that sends its `tasks/cancel` (not waited
/// for) and lets this follower go; whoever takes that work out sends the
/// `tasks/cancel`, once: the stop, or a give-up here.
///
/// A task lives in the server process that made it, reached through
/// `behind`, the client's connection to it, and every request about the
/// task goes there only (`Client::start_request_on`). When that process
/// exits, the task is gone with it: the client may start the server again
/// (`RestartPolicy`), but the new process never knew the task, and its id
/// could even name another task there. So the old id never goes to the
/// new process (no `tasks/get`, no `tasks/cancel`), and the proxy's task
/// ends `failed`, with a message saying the server behind restarted (or
/// exited, when no other process replaced it: no restart policy, or every
/// restart failed; a restart under way is waited for). A request about
/// the task that finds the link dead, whether it was sent or refused
/// there, ends the task with that message too, and so does a death
/// between two polls, seen within `DEATH_LOOK`. A server whose tasks
/// outlive its process (a shared store) is not told apart: its task is
/// given up all the same, and runs on there until it ends or its `ttlMs`
/// passes.
fn follow_task(
    client: &Arc<Client>,
    behind: &Arc<Link>,
    ctx: &RequestContext,
    stamp: &Map<String, Value>,
    task: Task,
) -> Result<Value, ErrorObject> {
    let id = task.task_id;
    let at_stop = {
        let (client, behind) = (Arc::clone(client), Arc::clone(behind));
        let (stamp, id) = (stamp.clone(), id.clone());
        let token = ctx.cancel_token();
        ctx.server().at_stop(move || {
            cancel_behind(&client, &behind, &stamp, &id);
            token.cancel();
        })
    };
    let start = |method: &str, mut params: Value| {
        params["_meta"] = Value::Object(stamp.clone());
        // A link that died meanwhile (while the caller was asked for
        // input, say) refuses the request: the task is gone with it.
        (client.start_request_on(behind, method, params, RequestOptions::new())).map_err(|e| {
            match behind.is_alive() {
                true => failed(method, e),
                false => gone(client, behind, ctx),
            }
        })
    };
    // A poll or an update behind that hangs is given up on as soon as the
    // caller cancels, not at the client's request timeout, and quietly:
    // `notifications/cancelled` MUST NOT be used for task cancellation
    // (spec extensions/tasks), `tasks/cancel` stands for it.
    let request = |method: &str, params: Value| -> Result<Value, ErrorObject> {
        let call = start(method, params)?;
        let raw = (call.wait_quietly(None, Some(&|| ctx.is_cancelled()))).map_err(|e| match e {
            _ if !behind.is_alive() => gone(client, behind, ctx),
            // The server's error for a request of the proxy's, not the
            // caller's: not passed off as the caller's call failing with
            // that code, and the server's task id never shown.
            Error::Rpc(e) => ErrorObject::internal_error(format!(
                "the server behind this proxy failed on {method} ({}): {}",
                e.code,
                e.message.replace(&id, ctx.task_id().unwrap_or("the task"))
            )),
            other => failed(method, other),
        })?;
        serde_json::from_str(raw.get()).map_err(internal)
    };
    // Following the task gave up (the caller cancelled, a request behind
    // failed, the proxy stopped): the task behind is cancelled, unless
    // the stop did it.
    let cancel = |why: ErrorObject| {
        if ctx.server().forget_at_stop(at_stop) {
            cancel_behind(client, behind, stamp, &id);
        }
        why
    };
    let mut poll = task.poll_interval_ms;
    // Each key answered, as a hash (`KeyHashes`): a server behind that
    // asks under a new long key at each poll costs the proxy 8 bytes a key.
    let mut answered = KeyHashes::default();
    let followed = (|| loop {
        if ctx.is_cancelled() {
            return Err(cancel(ErrorObject::internal_error(
                "the caller cancelled the task, or the proxy stopped",
            )));
        }
        if !behind.is_alive() {
            return Err(gone(client, behind, ctx));
        }
        let got = request(method::TASKS_GET, json!({ "taskId": id }));
        let got: GetTaskResult =
            serde_json::from_value(got.map_err(cancel)?).map_err(|e| cancel(internal(e)))?;
        let detailed = got.task;
        // Spec extensions/tasks: pollIntervalMs may change over the
        // task's life; the latest one counts.
        poll = detailed.task.poll_interval_ms.or(poll);
        match detailed.task.status {
            TaskStatus::Completed => return Ok(Value::Object(detailed.result.unwrap_or_default())),
            TaskStatus::Failed => {
                return Err(detailed.error.unwrap_or_else(|| {
                    ErrorObject::internal_error("the task behind this proxy failed")
                }));
            }
            TaskStatus::Cancelled => {
                return Err(ErrorObject::internal_error(format!(
                    "the task behind this proxy was cancelled{}",
                    detailed
                        .task
                        .status_message
                        .map_or_else(String::new, |m| format!(": {m}"))
                )));
            }
            TaskStatus::InputRequired => {
                // Each key once (spec extensions/tasks, "Task Update
                // Requests"); asked of the caller through the proxy's
                // own task, which shows `input_required` meanwhile.
                let asked: InputRequests = (detailed.input_requests.unwrap_or_default())
                    .into_iter()
                    .filter(|(key, _)| !answered.contains(key))
                    .collect();
                if !asked.is_empty() {
                    let answers = ctx.ask(asked).map_err(cancel)?;
                    for key in answers.keys() {
                        answered.insert(key);
                    }
                    let update = json!({ "taskId": id, "inputResponses": answers });
                    request(method::TASKS_UPDATE, update).map_err(cancel)?;
                    continue;
                }
            }
            TaskStatus::Working => {}
        }
        let interval = Duration::from_millis(poll.unwrap_or(1000));
        let until = Instant::now() + interval.clamp(Duration::from_millis(10), MAX_POLL);
        // The wait ends early when the caller cancels, and when the server
        // behind dies (looked at every `DEATH_LOOK`): its task is gone, and
        // the caller is not told it is `working` until the next poll.
        while behind.is_alive() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() || ctx.wait_cancelled(left.min(DEATH_LOOK)) {
                break;
            }
        }
    })();
    // Ended (or given up, the work taken already): the stop has nothing
    // left to cancel.
    ctx.server().forget_at_stop(at_stop);
    followed
}

/// The longest wait between two polls of a task behind, whatever the
/// server's `pollIntervalMs`.
const MAX_POLL: Duration = Duration::from_secs(10);

/// How often a wait between two polls looks whether the server behind
/// died (`follow_task`).
const DEATH_LOOK: Duration = Duration::from_millis(100);

/// Sends `tasks/cancel` behind for the task `id`, without waiting for its
/// answer, which changes nothing; only on `behind`, the connection to the
/// process that made the task (nothing is sent once it died).
fn cancel_behind(client: &Client, behind: &Arc<Link>, stamp: &Map<String, Value>, id: &str) {
    let params = json!({ "taskId": id, "_meta": stamp });
    let options = RequestOptions::new();
    if let Ok(call) = client.start_request_on(behind, method::TASKS_CANCEL, params, options) {
        call.detach();
    }
}

/// The error a task of the proxy's ends with when the server process
/// behind, which ran the task behind, is gone (`follow_task`): once the
/// client's restart, if one follows, is over (looked at every
/// `DEATH_LOOK`; a caller that cancels, or a stop, ends the wait),
/// "restarted" if another process runs in its place, else "exited" (no
/// restart policy, or every restart failed).
fn gone(client: &Client, behind: &Arc<Link>, ctx: &RequestContext) -> ErrorObject {
    let restarted = loop {
        match client.restarted(behind) {
            Some(restarted) => break restarted,
            None if ctx.wait_cancelled(DEATH_LOOK) => break false,
            None => {}
        }
    };
    let how = match restarted {
        true => "restarted",
        false => "exited",
    };
    ErrorObject::internal_error(format!(
        "the server behind this proxy {how} while it ran this task, and the task is gone with it"
    ))
}

fn failed(method: &str, e: Error) -> ErrorObject {
    match e {
        Error::Rpc(error) => error,
        Error::Cancelled => ErrorObject::internal_error(format!("{method} was cancelled")),
        other => ErrorObject::internal_error(format!(
            "the server behind this proxy failed on {method}: {other}"
        )),
    }
}

fn internal(e: impl std::fmt::Display) -> ErrorObject {
    ErrorObject::internal_error(format!("the proxy could not pass a message on: {e}"))
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

//! The blocking client: spawns a stdio server (or takes any byte-stream
//! pair), works out which era of the protocol it speaks, and sends it
//! requests from any number of threads.
//!
//! Everything blocks the calling thread; nothing needs a runtime. A
//! [`Client`] is `Send + Sync`: share it by reference or in an `Arc`.

mod builder;
mod call;
mod era;
#[cfg(feature = "http")]
mod http;
mod input;
#[cfg(feature = "legacy")]
mod legacy_listen;
mod link;
mod notes;
#[cfg(feature = "http")]
pub(crate) mod oauth;
mod pages;
mod process;
mod reply;
mod requests;
mod restart;
#[cfg(feature = "legacy")]
mod server_requests;
mod shared;
mod subscription;
mod tasks;
mod wire;

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

pub use builder::{ClientBuilder, RestartPolicy};
pub use call::{PendingCall, RequestOptions};
pub use era::{Era, EraPolicy};
#[cfg(feature = "http")]
pub use http::HeaderSource;
#[cfg(feature = "http")]
pub use oauth::{AuthorizeFn, MemoryTokenStore, OAuth, TokenStore, Tokens};
pub use pages::Pages;
pub use subscription::{Subscription, SubscriptionEnd, SubscriptionEvent};
pub use tasks::{TaskHandle, ToolCallStart};
pub use wire::WireDirection;

use crate::error::Error;
use crate::sync::lock;
use crate::transport::Transport;
use crate::types::{DiscoverResult, Implementation, ServerCapabilities};
pub(crate) use link::Link;
use shared::ClientInner;

/// A server process the client spawned, until it is connected.
pub(crate) struct Spawned {
    child: Child,
    stderr_tail: process::StderrTail,
}

/// Spawns the server and starts a link on its pipes.
fn start_server(
    options: &ClientBuilder,
    command: &mut Command,
) -> Result<(Arc<Link>, Spawned), Error> {
    let spawned = process::spawn(
        command,
        options.own_process_group,
        Arc::clone(&options.stderr),
        options.notes.clone(),
    )?;
    let link = Link::start(
        Box::new(std::io::BufReader::new(spawned.stdout)),
        link::ServerInput::pipe(spawned.stdin),
        options.max_line_bytes,
        options.notes.clone(),
        options.wire.clone(),
    )?;
    let spawned = Spawned {
        child: spawned.child,
        stderr_tail: spawned.stderr_tail,
    };
    Ok((link, spawned))
}

/// Settles the era of a first connection. A spawned server that fails is
/// shut down. One that exits right after an unanswered `server/discover`
/// (an older legacy server crashing on a method it does not know) is
/// spawned once more and spoken to with `initialize`, when the era policy
/// allows it; its restarts then skip the probe. `command` is `None` once
/// that respawn was spent.
fn settle(
    options: &mut ClientBuilder,
    link: Arc<Link>,
    spawned: Option<Spawned>,
    command: Option<&mut Command>,
    deadline: Option<Instant>,
) -> Result<(Arc<Link>, Option<Spawned>, era::ServerFacts), Error> {
    let mut spawned = spawned;
    let child = RefCell::new(spawned.as_mut().map(|s| &mut s.child));
    let exited =
        || (child.borrow_mut().as_mut()).is_some_and(|c| matches!(c.try_wait(), Ok(Some(_))));
    let e = match era::establish(options, &link, deadline, &exited) {
        Ok(facts) => return Ok((link, spawned, facts)),
        Err(e) => e,
    };
    let Some(Spawned {
        mut child,
        stderr_tail,
    }) = spawned
    else {
        link.close_input();
        return Err(e.error);
    };
    // Whether it exited on its own: looked at before its input closes,
    // which ends a server that refused us too, and is no death of its own.
    let exited = matches!(child.try_wait(), Ok(Some(_)));
    // A server that has read nothing of its input cannot see it close:
    // it is sent SIGTERM at once, and the close grace runs from there.
    // One that has read something reads on: a cancellation just sent, say
    // (tests/client modern_32022_then_silence_fails_without_initialize
    // lost its cancellation when any byte unread meant SIGTERM).
    let reading = !link.read_nothing().unwrap_or(false);
    link.close_input();
    // One that exited was reaped by `try_wait`: no signal for its pid,
    // which may be another process's now (its group's, while it has a
    // member, is not: `process` says why).
    let group = options.own_process_group;
    let status = if reading || exited {
        process::shut_down(&mut child, options.close_grace, group)
    } else {
        process::terminate_then_kill(&mut child, options.close_grace, group)
    }
    .ok();
    #[cfg(feature = "legacy")]
    if let (true, EraPolicy::Auto, Some(command)) = (e.died_on_probe, options.era, command) {
        let how = status.map_or_else(|| "exited".to_owned(), |s| format!("exited ({s})"));
        // Routine information, as the fallback of a legacy server that
        // answers the probe is.
        options.notes.info(&format!(
            "the server {how} on the server/discover probe{}: starting it again to speak initialize (an older legacy server that fails on methods it does not know)",
            crate::error::stderr_ending(&stderr_tail.lines(Duration::from_millis(200)))
        ));
        options.era = EraPolicy::LegacyOnly;
        let (link, spawned) = start_server(options, command)?;
        let mut settled = settle(options, link, Some(spawned), None, deadline)?;
        settled.2.legacy_reason = Some(format!(
            "it {how} on the server/discover probe, and was started again"
        ));
        return Ok(settled);
    }
    // Without the legacy era there is nothing to start it again for.
    #[cfg(not(feature = "legacy"))]
    let _ = (command, e.died_on_probe);
    // The connection closed under the probe: the server died (or closed
    // its output) while starting. Its stderr says why more often than
    // anything else.
    if exited || matches!(e.error, Error::Disconnected) {
        return Err(Error::ServerExited {
            status,
            stderr: stderr_tail.lines(Duration::from_millis(500)),
        });
    }
    Err(e.error)
}

/// A connection to one MCP server.
///
/// ```no_run
/// use mcp_stdio::Client;
///
/// let client = Client::spawn(std::process::Command::new("my-mcp-server"))?;
/// for tool in client.tools() {
///     println!("{}", tool?.name);
/// }
/// let result = client.call("echo", serde_json::json!({ "text": "hi" }))?;
/// println!("{}", result.text_content());
/// client.close()?;
/// # Ok::<(), mcp_stdio::Error>(())
/// ```
pub struct Client {
    pub(crate) inner: Arc<ClientInner>,
    closed: bool,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("era", &self.era())
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client with default settings.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// Spawns `command` as the server with default settings.
    pub fn spawn(command: Command) -> Result<Client, Error> {
        ClientBuilder::default().spawn(command)
    }

    /// Connects over a byte-stream pair with default settings.
    pub fn connect(transport: Transport) -> Result<Client, Error> {
        ClientBuilder::default().connect(transport)
    }

    /// Settles the era on a fresh connection and starts watching it; a
    /// spawned server that fails to start is shut down.
    pub(crate) fn start(
        mut options: ClientBuilder,
        link: Arc<Link>,
        spawned: Option<Spawned>,
        mut command: Option<Command>,
    ) -> Result<Client, Error> {
        // One deadline for the whole start, a respawn included.
        let deadline = options.start_timeout.map(crate::deadline::from_now);
        let (link, spawned, facts) =
            settle(&mut options, link, spawned, command.as_mut(), deadline)?;
        let (child, stderr_tail) = match spawned {
            Some(s) => (Some(s.child), Some(s.stderr_tail)),
            None => (None, None),
        };
        let inner = Arc::new(ClientInner {
            link: Arc::new(Mutex::new(Arc::clone(&link))),
            facts: Mutex::new(facts),
            child: Mutex::new(child),
            stderr_tail: Mutex::new(stderr_tail),
            command: command.map(Mutex::new),
            subscriptions: Mutex::new(HashMap::new()),
            next_subscription: AtomicU64::new(0),
            restarts: Mutex::new(0),
            closing: AtomicBool::new(false),
            given_up: AtomicBool::new(false),
            restart: Mutex::default(),
            restart_wake: Condvar::new(),
            options,
        });
        restart::watch(&inner, &link);
        Ok(Client {
            inner,
            closed: false,
        })
    }

    /// The era and version the client speaks with this server.
    pub fn era(&self) -> Era {
        lock(&self.inner.facts).era.clone()
    }

    /// The server's capabilities (from `server/discover`, or from
    /// `initialize` for a legacy server).
    pub fn server_capabilities(&self) -> ServerCapabilities {
        lock(&self.inner.facts).capabilities.clone()
    }

    /// The server's name and version, as it reported them.
    pub fn server_info(&self) -> Option<Implementation> {
        lock(&self.inner.facts).info.clone()
    }

    /// The server's instructions for models, if it gave any.
    pub fn instructions(&self) -> Option<String> {
        lock(&self.inner.facts).instructions.clone()
    }

    /// Why the client speaks the legacy era with this server, when the
    /// probe decided it: what the server answered to `server/discover`
    /// (`it answered server/discover with Method not found (-32601)`), or
    /// its silence (`no answer to server/discover within 5 s`). `None` for
    /// a modern server, and under [`EraPolicy::LegacyOnly`].
    pub fn legacy_reason(&self) -> Option<String> {
        lock(&self.inner.facts).legacy_reason.clone()
    }

    /// The `server/discover` result of the probe (modern servers only).
    pub fn discover_result(&self) -> Option<DiscoverResult> {
        lock(&self.inner.facts).discover.clone()
    }

    /// Shuts the server down the way the spec says: closes its input, waits
    /// for it to exit, then SIGTERM, then SIGKILL (each step waits the
    /// close grace). On Unix a spawned server's whole process group is
    /// waited for and signalled (what a wrapper such as `npx` or `sh -c`
    /// started, what the server left running when it exited; see
    /// [`ClientBuilder::own_process_group`]). Returns the exit status of
    /// a spawned server (`None` for a connection, or when `close` came
    /// during a restart, whose server it stopped).
    ///
    /// Once it returns, nothing waits and nothing it started runs: a
    /// restart under way is ended first (its server stopped the same way),
    /// what the server wrote before it exited is routed, its last stderr
    /// lines handed to the [`stderr`](ClientBuilder::stderr) hook (the
    /// reader and the stderr thread are given up to the close grace for
    /// it: a grandchild of the server may hold its output open), then
    /// every request still waiting fails with [`Error::Disconnected`] and
    /// every subscription still open ends
    /// [`SubscriptionEnd::Disconnected`]. What the output carries after
    /// that (a grandchild that goes on writing) is not routed: no hook of
    /// the application's is called for it. A hook the reader was already
    /// in (an `on_log` that blocks) returns in its own time; `close` does
    /// not wait for it past the close grace.
    pub fn close(mut self) -> Result<Option<ExitStatus>, Error> {
        self.closed = true;
        self.inner.close(self.inner.options.close_grace)
    }

    /// [`close`](Client::close) within about `limit`: each of its three
    /// waits (the server's exit after its input closes, its exit after
    /// SIGTERM, the end of its output) is cut to a third of `limit` when
    /// that is less than the close grace. For an application with a
    /// deadline of its own (a command's `--timeout`): a server that stays
    /// after its input ends, or ignores SIGTERM, is killed in time.
    pub fn close_within(mut self, limit: Duration) -> Result<Option<ExitStatus>, Error> {
        self.closed = true;
        self.inner
            .close(self.inner.options.close_grace.min(limit / 3))
    }

    /// Whether the server is gone for good: the client was closed, or
    /// its connection died and no restart follows (not a spawned server,
    /// no [`RestartPolicy`](crate::RestartPolicy), its restarts used up,
    /// or the last attempt failed). While a restart is under way it is
    /// not. For a gateway serving through the client
    /// (`mcp-stdio serve-http`), which stops then rather than answer
    /// every request with an error for the rest of its life.
    pub fn is_gone(&self) -> bool {
        use std::sync::atomic::Ordering;
        let inner = &self.inner;
        if inner.closing.load(Ordering::Acquire) || inner.given_up.load(Ordering::Acquire) {
            return true;
        }
        // A link is installed with its `restartable` already set
        // (`restart::start_again`), so a dead one that says no restart
        // follows is the last.
        let link = self.link();
        !link.is_alive() && !link.restartable.load(Ordering::Acquire)
    }

    /// [`Client::close`] for a client shared between threads (an
    /// `Arc<Client>`, as the handlers of `proxy::serve_as` hold it): the
    /// same shutdown, for every holder. What the
    /// others ask after it fails with [`Error::Disconnected`]; dropping
    /// the client later closes nothing more.
    pub fn close_shared(&self) -> Result<Option<ExitStatus>, Error> {
        self.inner.close(self.inner.options.close_grace)
    }

    /// The client's requests are many callers' from here on (a proxy's):
    /// see `Notes::serve_many_callers`.
    #[cfg(feature = "server")]
    pub(crate) fn serve_many_callers(&self) {
        self.inner.options.notes.serve_many_callers();
    }

    /// `params` with the `_meta` every request of this client carries
    /// (`shared::stamp_for`, no log level, no progress): the params of a
    /// request sent where the client is not at hand (a late reply's,
    /// `PendingCall::on_late_reply`).
    pub(crate) fn stamp(&self, params: serde_json::Value) -> Result<serde_json::Value, Error> {
        let no_id = crate::jsonrpc::RequestId::Number(0);
        shared::stamp_for(&self.inner, params, &no_id, None, false)
    }

    /// [`Client::start_request`] on `link`, a connection of this client's
    /// (`PendingCall::link`), and only there: on one that died (the server
    /// behind it exited, maybe restarted since) it fails with
    /// [`Error::Disconnected`]. For the requests about something that
    /// lives on one server process only: its tasks (`proxy::follow_task`).
    #[cfg(feature = "server")]
    pub(crate) fn start_request_on(
        &self,
        link: &Arc<Link>,
        method: &str,
        params: serde_json::Value,
        options: RequestOptions,
    ) -> Result<PendingCall, Error> {
        (self.inner).start_request_on(Arc::clone(link), method, params, options)
    }

    /// The current connection.
    pub(crate) fn link(&self) -> Arc<Link> {
        Arc::clone(&lock(&self.inner.link))
    }
}

impl ClientInner {
    /// Closes the current connection and shuts a spawned server down,
    /// each wait at most `grace`; see [`Client::close`] for what holds
    /// once it returns.
    fn close(&self, grace: Duration) -> Result<Option<ExitStatus>, Error> {
        self.closing.store(true, Ordering::Release);
        self.end_restart();
        let link = Arc::clone(&lock(&self.link));
        link.restartable.store(false, Ordering::Release);
        link.close_input();
        #[cfg(feature = "http")]
        if self.options.http.connected {
            // Over HTTP closing the input ends the session (a DELETE) and
            // every stream; the reader ends once they have. Waited for, so
            // the session is over when close returns. std has no wait on a
            // flag with a timeout: poll, every 5 ms.
            let deadline = crate::deadline::from_now(grace);
            while link.is_alive() && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        let child = lock(&self.child).take();
        let res = match child {
            Some(mut child) => {
                process::shut_down(&mut child, grace, self.options.own_process_group).map(Some)
            }
            None => Ok(None),
        };
        // What the server wrote before it exited reaches its requests and
        // subscriptions (a subscription's final result among it), and its
        // last stderr lines the application's hook, within one grace for
        // both; then whatever still waits fails, even when the output never
        // ends (a grandchild of the server holds it open).
        let output_ends = crate::deadline::from_now(grace);
        link.wait_reader(grace);
        let stderr = lock(&self.stderr_tail)
            .as_ref()
            .map(|tail| (tail.ended(), Arc::clone(&tail.gate)));
        if let Some((ended, gate)) = stderr {
            let _ = ended.recv_deadline(output_ends);
            // What a grandchild of the server writes after this reaches
            // no hook.
            gate.shut(output_ends);
        }
        link.fail_all();
        restart::give_up(self);
        // The notes of the session reach the trace (or stderr) before
        // close returns, unless the hook is stuck: then close waits no
        // longer than this.
        self.options.notes.flush(Duration::from_millis(250));
        Ok(res?)
    }

    /// Ends a restart under way, once `closing` is set: wakes its backoff,
    /// fails the link of the server it is probing (so the probe ends now,
    /// not at its timeout), and waits for its thread, which then stops
    /// that server (its input closed first) and gives up. Whatever the
    /// restart installed before it saw `closing` is the current child and
    /// link when this returns.
    fn end_restart(&self) {
        let (thread, starting) = {
            let mut restarting = lock(&self.restart);
            (restarting.thread.take(), restarting.starting.clone())
        };
        // After the lock: a backoff that had not seen `closing` is waiting.
        self.restart_wake.notify_all();
        if let Some(link) = starting {
            link.fail_all();
        }
        // Not on the restart's own thread (an application hook that ran
        // there and closed the client): it would wait for itself.
        if let Some(thread) = thread
            && thread.thread().id() != std::thread::current().id()
        {
            let _ = thread.join();
        }
    }
}

impl Drop for Client {
    /// Closes the connection as [`Client::close`] does: bounded by three
    /// times the close grace (the server's exit, after its input and after
    /// SIGTERM, then its output's end), and by the stop of a restart's
    /// server when one is under way.
    fn drop(&mut self) {
        if !self.closed && !self.inner.closing.load(Ordering::Acquire) {
            let _ = self.inner.close(self.inner.options.close_grace);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_client_can_be_shared_between_threads() {
        fn shared<T: Send + Sync>() {}
        fn sent<T: Send>() {}
        shared::<super::Client>();
        sent::<super::Subscription>();
        sent::<super::PendingCall>();
        shared::<super::TaskHandle>();
    }
}

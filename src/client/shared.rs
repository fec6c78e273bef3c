//! What a [`Client`](crate::Client) shares with its pages, subscriptions
//! and restart watcher: the settings, the current connection, what it
//! knows about the server, the server process, and the `_meta` every
//! request is stamped with.

use std::collections::HashMap;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::client::builder::ClientBuilder;
use crate::client::call::{PendingCall, RequestOptions};
use crate::client::era::{Era, ServerFacts};
use crate::client::link::{Link, SubscriptionSink};
use crate::client::process;
use crate::error::Error;
use crate::jsonrpc::RequestId;
use crate::sync::lock;
use crate::types::{LoggingLevel, SubscriptionFilter, TASKS_EXTENSION, meta_key};

/// A restart under way (`restart.rs`), for `close` to end before it returns.
#[derive(Default)]
pub(crate) struct Restarting {
    /// The restart's thread, while it may still run.
    pub thread: Option<std::thread::JoinHandle<()>>,
    /// The link of the server it started, until that server's era is
    /// settled: `close` fails it, which ends the probe at once.
    pub starting: Option<Arc<Link>>,
}

/// A subscription the client keeps alive across restarts.
pub(crate) struct LiveSubscription {
    pub id: Arc<Mutex<RequestId>>,
    pub filter: SubscriptionFilter,
    pub tx: SubscriptionSink,
}

/// What a [`Client`](crate::Client) shares with its subscriptions, pages and restart
/// watcher: the settings, the current connection, and the server process.
pub(crate) struct ClientInner {
    pub options: ClientBuilder,
    /// The current connection; subscriptions share the cell so that they
    /// cancel on whichever connection is current.
    pub link: Arc<Mutex<Arc<Link>>>,
    pub facts: Mutex<ServerFacts>,
    pub child: Mutex<Option<Child>>,
    /// The last lines of the current server's stderr (spawned servers).
    pub stderr_tail: Mutex<Option<process::StderrTail>>,
    pub command: Option<Mutex<Command>>,
    pub subscriptions: Mutex<HashMap<u64, LiveSubscription>>,
    pub next_subscription: AtomicU64,
    pub restarts: Mutex<u32>,
    pub closing: AtomicBool,
    /// Set (under the subscriptions' lock) once no restart will follow:
    /// a subscription recorded after that ends at once (`Client::track`).
    pub given_up: AtomicBool,
    /// The restart under way, if any. `closing` is set before this lock is
    /// taken by `close`, and read under it by the restart, so each sees
    /// the other.
    pub restart: Mutex<Restarting>,
    /// Wakes a restart's backoff and a task's wait between two polls when
    /// `close` comes (under the restart's lock).
    pub restart_wake: Condvar,
}

impl ClientInner {
    /// Sleeps for `pause`, unless `close` comes first (it sets `closing`,
    /// then takes the restart's lock and wakes `restart_wake`, so a close
    /// is seen before the sleep or wakes it): whether the client is still
    /// open.
    pub fn pause_unless_closed(&self, pause: Duration) -> bool {
        let restarting = lock(&self.restart);
        let _ = self
            .restart_wake
            .wait_timeout_while(restarting, pause, |_| !self.closing.load(Ordering::Acquire));
        !self.closing.load(Ordering::Acquire)
    }

    /// Sends a request on the current connection, stamped with the
    /// protocol `_meta`, and returns the handle that waits for its reply.
    pub fn start_request(
        &self,
        method: &str,
        params: Value,
        options: RequestOptions,
    ) -> Result<PendingCall, Error> {
        let link = Arc::clone(&lock(&self.link));
        self.start_request_on(link, method, params, options)
    }

    /// [`start_request`](ClientInner::start_request) on `link`, whether or
    /// not it is still the current connection: a request on one that
    /// died fails with [`Error::Disconnected`], and never reaches the
    /// server started again in its place.
    pub fn start_request_on(
        &self,
        link: Arc<Link>,
        method: &str,
        params: Value,
        options: RequestOptions,
    ) -> Result<PendingCall, Error> {
        let id = link.next_id();
        let log_level = options.log.as_ref().map(|(level, _)| *level);
        let params = stamp_for(self, params, &id, log_level, options.progress.is_some())?;
        let line = crate::jsonrpc::encode_request(&id, method, &params)?;
        let token = options.progress.is_some().then(|| id.clone());
        let rx = link.register(&id, token, options.log.is_some());
        if let Err(e) = link.try_send(line) {
            // Never sent: nothing to cancel.
            link.forget(&id);
            return Err(e);
        }
        Ok(PendingCall {
            id,
            link: Arc::clone(&link),
            rx,
            options,
            started: Instant::now(),
            default_timeout: self.options.request_timeout,
            done: false,
            late: None,
        })
    }

    /// Whether the client's requests declare the Tasks extension: a modern
    /// server, and the extension among the capabilities.
    pub fn declares_tasks(&self) -> bool {
        matches!(lock(&self.facts).era, Era::Modern { .. })
            && self
                .options
                .capabilities
                .get("extensions")
                .and_then(Value::as_object)
                .is_some_and(|extensions| extensions.contains_key(TASKS_EXTENSION))
    }
}

/// Adds the protocol `_meta` to a request's params: version, identity and
/// capabilities for a modern server (unless the caller set them), the log
/// level and progress token when asked for.
pub(crate) fn stamp_for(
    inner: &ClientInner,
    params: Value,
    id: &RequestId,
    log_level: Option<LoggingLevel>,
    progress: bool,
) -> Result<Value, Error> {
    let mut map = match params {
        Value::Null => Map::new(),
        Value::Object(map) => map,
        other => {
            return Err(Error::Protocol(format!(
                "request params must be a JSON object, not {other}"
            )));
        }
    };
    let era = lock(&inner.facts).era.clone();
    let mut meta = match map.remove("_meta") {
        Some(Value::Object(meta)) => meta,
        _ => Map::new(),
    };
    if let Era::Modern { version } = &era {
        meta.entry(meta_key::PROTOCOL_VERSION)
            .or_insert_with(|| version.as_str().into());
        meta.entry(meta_key::CLIENT_INFO)
            .or_insert_with(|| serde_json::to_value(&inner.options.info).unwrap_or(Value::Null));
        meta.entry(meta_key::CLIENT_CAPABILITIES)
            .or_insert_with(|| Value::Object(inner.options.capabilities.clone()));
        if let Some(level) = log_level {
            meta.insert(meta_key::LOG_LEVEL.into(), serde_json::to_value(level)?);
        }
    }
    if progress {
        meta.insert(meta_key::PROGRESS_TOKEN.into(), id.to_value());
    }
    if !meta.is_empty() {
        map.insert("_meta".into(), Value::Object(meta));
    }
    Ok(Value::Object(map))
}

//! Unexpected termination (spec 2026-07-28 basic/transports/stdio): when
//! a spawned server dies, every pending request fails at once and the
//! trace gets a problem note with its exit status and the last lines of
//! its stderr; with a [`RestartPolicy`](crate::client::RestartPolicy) the
//! client then starts the server again, probes its era afresh, and sends
//! `subscriptions/listen` again for every live subscription, so the same
//! handles keep delivering.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

#[cfg(feature = "legacy")]
use crate::client::legacy_listen;
use crate::client::link::{Link, SubscriptionDelivery};
use crate::client::shared::{ClientInner, LiveSubscription, stamp_for};
use crate::client::{Client, era, process, start_server};
use crate::jsonrpc::encode_request;
use crate::sync::lock;
use crate::types::method;

/// Whether the death of `link` will be followed by a restart: a spawned
/// server, a restart policy, restarts left, and no `close` under way.
fn may_restart(inner: &ClientInner) -> bool {
    inner.command.is_some()
        && !inner.closing.load(Ordering::Acquire)
        && inner
            .options
            .restart
            .as_ref()
            .is_some_and(|policy| *lock(&inner.restarts) < policy.max_restarts)
}

/// Arms `link`'s death watch: its death is noted, and a restart follows
/// when the policy allows. A link that already died (right after the
/// probe, say) fires at once, so no death between the start and this
/// call is missed.
pub(crate) fn watch(inner: &Arc<ClientInner>, link: &Arc<Link>) {
    if inner.command.is_none() {
        return;
    }
    let allowed = may_restart(inner);
    link.restartable.store(allowed, Ordering::Release);
    let weak: Weak<ClientInner> = Arc::downgrade(inner);
    link.on_death(Box::new(move || {
        let Some(inner) = weak.upgrade() else {
            return;
        };
        if inner.closing.load(Ordering::Acquire) {
            // A close that came after the reader told the subscriptions
            // `Reconnecting`: no restart follows, so they end here.
            return give_up(&inner);
        }
        note_death(&inner);
        if !allowed {
            return;
        }
        // Under the restart's lock, where `close` looks for a restart: a
        // close that came meanwhile is seen here, or sees this thread.
        let mut restarting = lock(&inner.restart);
        if inner.closing.load(Ordering::Acquire) {
            drop(restarting);
            return give_up(&inner);
        }
        // The restart runs on its own thread: the reader that calls this is
        // about to exit, and a restart thread that arms a dead link must
        // not wait for the next one.
        let weak = Arc::downgrade(&inner);
        let spawned = std::thread::Builder::new()
            .name("mcp-client-restart".into())
            .spawn(move || {
                if let Some(inner) = weak.upgrade() {
                    restart(&inner);
                }
            });
        match spawned {
            Ok(thread) => restarting.thread = Some(thread),
            Err(_) => {
                drop(restarting);
                inner
                    .options
                    .notes
                    .problem("could not start a thread to restart the server");
                give_up(&inner);
            }
        }
    }));
}

/// A problem note for a server whose output ended while the client was
/// not closing it: how it exited, if it did within a moment, and the
/// last lines of its stderr.
fn note_death(inner: &ClientInner) {
    // Its output closing usually means it exited; give the exit a moment
    // to be seen (the status is kept for `close`).
    let status = lock(&inner.child)
        .as_mut()
        .and_then(|child| process::wait_timeout(child, Duration::from_millis(200)));
    let stderr = lock(&inner.stderr_tail)
        .as_ref()
        .map(|tail| tail.lines(Duration::from_millis(200)))
        .unwrap_or_default();
    let how = match status {
        Some(status) => format!("the server exited ({status})"),
        None => "the server closed its output".to_owned(),
    };
    inner
        .options
        .notes
        .problem(&format!("{how}{}", crate::error::stderr_ending(&stderr)));
}

fn restart(inner: &Arc<ClientInner>) {
    let Some(policy) = inner.options.restart.clone() else {
        return;
    };
    loop {
        if inner.closing.load(Ordering::Acquire) {
            return give_up(inner);
        }
        let attempt = {
            let mut restarts = lock(&inner.restarts);
            if *restarts >= policy.max_restarts {
                drop(restarts);
                return give_up(inner);
            }
            *restarts += 1;
            *restarts
        };
        // Reap the dead server.
        if let Some(mut child) = lock(&inner.child).take() {
            // What it left running in its process group goes with it.
            let group = inner.options.own_process_group;
            let _ = process::shut_down(&mut child, Duration::from_millis(100), group);
        }
        // The backoff, cut short by a close (`close` sets `closing`, then
        // takes this lock and wakes it): no server is started just to be
        // stopped.
        let backoff = policy.backoff.saturating_mul(attempt);
        let restarting = lock(&inner.restart);
        let _ = inner
            .restart_wake
            .wait_timeout_while(restarting, backoff, |_| {
                !inner.closing.load(Ordering::Acquire)
            });
        if inner.closing.load(Ordering::Acquire) {
            return give_up(inner);
        }
        match start_again(inner) {
            Ok(()) => return,
            // A close ended the attempt: the loop gives up.
            Err(_) if inner.closing.load(Ordering::Acquire) => {}
            Err(e) => inner
                .options
                .notes
                .problem(&format!("restarting the server failed: {e}")),
        }
    }
}

/// One restart attempt, in the order that leaves no death unseen:
///
/// 1. spawn the server and start its link; publish the link for `close`
///    (`Restarting::starting`), unless a close came, which stops the
///    server at once;
/// 2. mark the link restartable before anything is adopted on it, so a
///    subscription re-sent on a link that already died is told
///    `Reconnecting`, never `Disconnected`, while restarts remain;
/// 3. probe its era: a death here fails the attempt, and `restart` tries
///    again; a `close` fails the link, which ends the probe at once;
/// 4. install the child, the facts and the link, and re-send every live
///    subscription, all under the subscriptions' lock, which `track` takes
///    too: a listen acknowledged on the old link is either re-sent here
///    or by `track`;
/// 5. arm the death watch, which fires at once for a link that died
///    since step 3.
///
/// A server this stops gets its input closed first (spec 2026-07-28
/// basic/transports/stdio, "Shutdown"), then the grace, SIGTERM, SIGKILL.
fn start_again(inner: &Arc<ClientInner>) -> Result<(), crate::Error> {
    let Some(command) = &inner.command else {
        return Ok(());
    };
    let (link, spawned) = start_server(&inner.options, &mut lock(command))?;
    link.restartable
        .store(may_restart(inner), Ordering::Release);
    let child = spawned.child;
    *lock(&inner.stderr_tail) = Some(spawned.stderr_tail);
    let stop = |mut child: std::process::Child| {
        link.close_input();
        let options = &inner.options;
        let _ = process::shut_down(&mut child, options.close_grace, options.own_process_group);
    };
    {
        let mut restarting = lock(&inner.restart);
        if inner.closing.load(Ordering::Acquire) {
            drop(restarting);
            stop(child);
            give_up(inner);
            return Ok(());
        }
        restarting.starting = Some(Arc::clone(&link));
    }
    let deadline = inner.options.start_timeout.map(crate::deadline::from_now);
    let mut child = child;
    let probed = std::cell::RefCell::new(&mut child);
    let exited = || matches!(probed.borrow_mut().try_wait(), Ok(Some(_)));
    let facts = era::establish(&inner.options, &link, deadline, &exited);
    lock(&inner.restart).starting = None;
    let facts = match facts {
        Ok(facts) => facts,
        Err(e) => {
            stop(child);
            return Err(e.error);
        }
    };
    {
        // The subscriptions' lock first: `track` takes it before it reads
        // the current link.
        let subs = lock(&inner.subscriptions);
        // A close that came while this server started: stop it again.
        // `close` waits for this thread before it looks at the child and
        // the link, so whatever is installed here is its to close.
        let mut slot = lock(&inner.child);
        if inner.closing.load(Ordering::Acquire) {
            drop(slot);
            drop(subs);
            stop(child);
            // The subscriptions heard `Reconnecting` when the old server
            // died; they will not be re-sent now.
            give_up(inner);
            return Ok(());
        }
        *slot = Some(child);
        drop(slot);
        *lock(&inner.facts) = facts;
        *lock(&inner.link) = Arc::clone(&link);
        for sub in subs.values() {
            relisten(inner, &link, sub);
        }
    }
    inner.options.notes.problem("the server was restarted");
    wake_restart_waiters(inner);
    watch(inner, &link);
    Ok(())
}

/// Wakes [`Client::wait_restarted`] (and, spuriously, a backoff or a
/// task's pause, which wait on again): taken after the change it
/// announces, the restart's lock orders this after a waiter's look at
/// it, or before it.
fn wake_restart_waiters(inner: &ClientInner) {
    drop(lock(&inner.restart));
    inner.restart_wake.notify_all();
}

impl Client {
    /// Waits, after `dead`, the connection something was sent on, died,
    /// for the restart that replaces it: whether one did (the current
    /// connection is another, to a server started again). False at once
    /// for a connection that still works (what failed was not its death)
    /// or that no restart follows (not a spawned server, no restart
    /// policy, or none left); false once the restarts run out or the
    /// client closes. Bounded by the restarts: each attempt ends, and the
    /// last one gives up.
    /// [`wait_restarted`](Client::wait_restarted) without the wait:
    /// `Some(true)` once another connection replaced `dead`, `Some(false)`
    /// when none will (it still works, no restart follows, the restarts
    /// ran out or the client closes), `None` while a restart is under way.
    #[cfg(feature = "server")]
    pub(crate) fn restarted(&self, dead: &Arc<Link>) -> Option<bool> {
        let inner = &self.inner;
        if !Arc::ptr_eq(&lock(&inner.link), dead) {
            return Some(true);
        }
        let over = dead.is_alive()
            || !dead.restartable.load(Ordering::Acquire)
            || inner.closing.load(Ordering::Acquire)
            || inner.given_up.load(Ordering::Acquire);
        // The link may have been replaced just before `given_up` was set
        // (a later death whose restarts ran out): look again.
        match over {
            true => Some(!Arc::ptr_eq(&lock(&inner.link), dead)),
            false => None,
        }
    }

    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    pub(crate) fn wait_restarted(&self, dead: &Arc<Link>) -> bool {
        let inner = &self.inner;
        let replaced = || !Arc::ptr_eq(&lock(&inner.link), dead);
        if replaced() {
            return true;
        }
        if dead.is_alive() || !dead.restartable.load(Ordering::Acquire) {
            return false;
        }
        // The restart's lock, then the link's (nothing takes them the
        // other way round); `start_again` installs the link, `give_up`
        // sets `given_up` and `close` sets `closing` before each takes
        // this lock and wakes `restart_wake`.
        let restarting = lock(&inner.restart);
        let _restarting = inner
            .restart_wake
            .wait_while(restarting, |_| {
                !replaced()
                    && !inner.closing.load(Ordering::Acquire)
                    && !inner.given_up.load(Ordering::Acquire)
            })
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        replaced()
    }
}

/// Re-opens a live subscription on `link`, the current connection, with
/// the same delivery channel: its handle sees the new ack as
/// `Resubscribed`. Called with the subscriptions' lock held. One that
/// overflowed is not re-opened: it ended (its handle reads
/// `Overflowed` after its events), though it is live until the handle
/// reads that.
pub(crate) fn relisten(inner: &ClientInner, link: &Arc<Link>, sub: &LiveSubscription) {
    if sub.tx.overflowed() {
        return;
    }
    let id = link.next_id();
    *lock(&sub.id) = id.clone();
    #[cfg(feature = "legacy")]
    {
        let facts = lock(&inner.facts);
        if let crate::client::Era::Legacy { .. } = facts.era {
            let caps = facts.capabilities.clone();
            drop(facts);
            return legacy_listen::reopen(link, &caps, &id, &sub.filter, sub.tx.clone());
        }
    }
    link.adopt_subscription(&id, sub.tx.clone());
    let params = serde_json::json!({ "notifications": sub.filter });
    let line = stamp_for(inner, params, &id, None, false)
        .and_then(|params| Ok(encode_request(&id, method::SUBSCRIPTIONS_LISTEN, &params)?));
    match line {
        // A link that died since gets its restart, which sends it again.
        Ok(line) => {
            let _ = link.send(line);
        }
        Err(e) => {
            link.forget_subscription(&id);
            sub.tx.send(SubscriptionDelivery::Disconnected);
            inner
                .options
                .notes
                .problem(&format!("could not send the listen again: {e}"));
        }
    }
}

/// No more restarts: every live subscription is disconnected for good.
/// Called with neither the subscriptions' lock nor the restart's held.
pub(crate) fn give_up(inner: &ClientInner) {
    let subs = lock(&inner.subscriptions);
    inner.given_up.store(true, Ordering::Release);
    for sub in subs.values() {
        sub.tx.send(SubscriptionDelivery::Disconnected);
    }
    drop(subs);
    wake_restart_waiters(inner);
}

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
use crate::client::link::{Link, ServerInput, SubscriptionDelivery};
use crate::client::shared::{ClientInner, stamp_for};
use crate::client::{era, process};
use crate::jsonrpc::encode_request;
use crate::sync::lock;
use crate::types::method;

/// Arms `link` so that the death of a spawned server is noted, and
/// triggers a restart when the policy allows.
pub(crate) fn watch(inner: &Arc<ClientInner>, link: &Arc<Link>) {
    if inner.command.is_none() {
        return;
    }
    let allowed = inner
        .options
        .restart
        .as_ref()
        .is_some_and(|policy| *lock(&inner.restarts) < policy.max_restarts);
    link.restartable.store(allowed, Ordering::Release);
    let weak: Weak<ClientInner> = Arc::downgrade(inner);
    link.on_death(Box::new(move || {
        let Some(inner) = weak.upgrade() else {
            return;
        };
        if inner.closing.load(Ordering::Acquire) {
            return;
        }
        note_death(&inner);
        if !allowed {
            return;
        }
        // The restart runs on its own thread: the reader that calls this is
        // about to exit.
        let weak = Arc::downgrade(&inner);
        let spawned = std::thread::Builder::new()
            .name("mcp-client-restart".into())
            .spawn(move || {
                if let Some(inner) = weak.upgrade() {
                    restart(&inner);
                }
            });
        if spawned.is_err() {
            // No thread, no restart; the subscriptions learn nothing more.
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
            let _ = process::shut_down(&mut child, Duration::from_millis(100));
        }
        std::thread::sleep(policy.backoff * attempt);
        match start_again(inner) {
            Ok(()) => return,
            Err(e) => inner
                .options
                .notes
                .problem(&format!("restarting the server failed: {e}")),
        }
    }
}

fn start_again(inner: &Arc<ClientInner>) -> Result<(), crate::Error> {
    let Some(command) = &inner.command else {
        return Ok(());
    };
    let spawned = process::spawn(&mut lock(command), Arc::clone(&inner.options.stderr))?;
    let link = Link::start(
        Box::new(std::io::BufReader::new(spawned.stdout)),
        ServerInput::pipe(spawned.stdin),
        inner.options.max_line_bytes,
        inner.options.notes.clone(),
        inner.options.wire.clone(),
    )?;
    let mut child = spawned.child;
    *lock(&inner.stderr_tail) = Some(spawned.stderr_tail);
    let facts = match era::establish(&inner.options, &link) {
        Ok(facts) => facts,
        Err(e) => {
            link.close_input();
            let _ = process::shut_down(&mut child, inner.options.close_grace);
            return Err(e);
        }
    };
    // A close that came while this server started: stop it again. Checked
    // under the child's lock, which `close` takes after it sets `closing`,
    // so the new child is either stopped here or found by `close`.
    {
        let mut slot = lock(&inner.child);
        if inner.closing.load(Ordering::Acquire) {
            drop(slot);
            link.close_input();
            let _ = process::shut_down(&mut child, inner.options.close_grace);
            return Ok(());
        }
        *slot = Some(child);
    }
    *lock(&inner.facts) = facts;
    *lock(&inner.link) = Arc::clone(&link);
    // Re-open every live subscription on the new connection, with the
    // same delivery channel: its handle sees the new ack as `Resubscribed`.
    #[cfg(feature = "legacy")]
    let legacy = matches!(lock(&inner.facts).era, crate::client::Era::Legacy { .. });
    for sub in lock(&inner.subscriptions).values() {
        let id = link.next_id();
        *lock(&sub.id) = id.clone();
        #[cfg(feature = "legacy")]
        if legacy {
            let caps = lock(&inner.facts).capabilities.clone();
            legacy_listen::reopen(&link, &caps, &id, &sub.filter, sub.tx.clone());
            continue;
        }
        link.adopt_subscription(&id, sub.tx.clone());
        let params = serde_json::json!({ "notifications": sub.filter });
        let client_params = stamp_for(inner, params, &id, None, false)?;
        link.send(encode_request(
            &id,
            method::SUBSCRIPTIONS_LISTEN,
            &client_params,
        )?);
    }
    watch(inner, &link);
    inner.options.notes.problem("the server was restarted");
    Ok(())
}

/// No more restarts: every live subscription is disconnected for good.
fn give_up(inner: &Arc<ClientInner>) {
    for sub in lock(&inner.subscriptions).values() {
        let _ = sub.tx.send(SubscriptionDelivery::Disconnected);
    }
}

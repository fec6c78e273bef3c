//! Ctrl-C (and SIGTERM) for `listen` and `serve-http`, which run until
//! they are interrupted: instead of dying, `listen` cancels its
//! subscription (the server gets `notifications/cancelled`), closes the
//! server's input, and says so; `serve-http` stops serving once the
//! requests in flight are answered, and exits 0.
//!
//! With the crate's `signals` feature (on by default) through `ctrlc`, the
//! crate's one signal dependency. The server is then started in a process
//! group of its own (`ClientBuilder::own_process_group`, set by the
//! callers), so that the terminal's Ctrl-C reaches this process alone and
//! the server is ended by the protocol, not by the signal racing it (and
//! with it whatever it started, a wrapper's server). Without the feature
//! (a `--no-default-features --features client` build), and for every
//! other command, the server stays in this process's group: Ctrl-C keeps
//! its default and ends both at once; `listen` still ends cleanly when the
//! server sends its final result.
//!
//! Why not block the signals and take them with `sigwait`, which needs no
//! handler at all: a blocked mask is inherited by the server through
//! `exec` (std does not clear it), and a server that can never see SIGINT
//! or SIGTERM is a worse surprise than a handler here. Other commands keep
//! the default: Ctrl-C ends them at once, and `--timeout` is how a script
//! bounds a call.

use crossbeam_channel::Receiver;

/// Installs the handler; the channel receives each SIGINT or SIGTERM.
/// `None` when it cannot be installed, or without the `signals` feature.
#[cfg(feature = "signals")]
pub fn catch() -> Option<Receiver<()>> {
    // Unbounded: the handler thread must never block on a person pressing
    // Ctrl-C twice.
    let (tx, rx) = crossbeam_channel::unbounded();
    ctrlc::set_handler(move || {
        // The receiver is gone only once `listen` (or `serve-http`) ended.
        let _ = tx.send(());
    })
    .ok()?;
    Some(rx)
}

/// Without the `signals` feature Ctrl-C keeps its default.
#[cfg(not(feature = "signals"))]
pub fn catch() -> Option<Receiver<()>> {
    None
}

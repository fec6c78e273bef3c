//! The cancel token a handler polls or sleeps on; the owner trips it when
//! the client cancels the request or the server stops past its grace
//! period.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// A cancellation flag shared between the owner thread and a handler.
///
/// Cheap to clone; cloning shares the flag. Handlers poll
/// [`CancelToken::is_cancelled`] between units of work, or sleep with
/// [`CancelToken::wait_timeout`], which wakes early on cancellation.
#[derive(Clone, Default)]
pub struct CancelToken {
    inner: Arc<TokenState>,
}

#[derive(Default)]
struct TokenState {
    cancelled: AtomicBool,
    // The mutex guards nothing but the condition variable's wait; the flag
    // itself is the atomic, so `is_cancelled` never takes the lock.
    lock: Mutex<()>,
    wake: Condvar,
}

impl fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancelToken")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    /// Whether the request was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::Acquire)
    }

    /// Trips the token and wakes every waiter.
    pub fn cancel(&self) {
        let _guard = self.inner.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.inner.cancelled.store(true, Ordering::Release);
        self.inner.wake.notify_all();
    }

    /// Blocks for up to `timeout`, returning early when the token is
    /// cancelled. Returns whether it is cancelled.
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        // A timeout past what `Instant` can hold (say `u64::MAX` ms from a
        // client's arguments) waits until cancelled, instead of panicking.
        let deadline = Instant::now().checked_add(timeout);
        let mut guard = self.inner.lock.lock().unwrap_or_else(|e| e.into_inner());
        while !self.is_cancelled() {
            let left = match deadline {
                Some(at) => match at.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => left,
                    _ => break,
                },
                None => Duration::from_secs(3600),
            };
            guard = match self.inner.wake.wait_timeout(guard, left) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        self.is_cancelled()
    }
}

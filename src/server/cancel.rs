//! The cancel token a handler polls or sleeps on; the owner trips it when
//! the client cancels the request or the server stops past its grace
//! period, and a task's token trips by itself at the task's TTL.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};

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
    /// When the token trips by itself: a task's TTL (the store's clock,
    /// `StoredTask::expires`); `None` for a request's.
    expires: Option<SystemTime>,
    // The mutex guards nothing but the condition variable's wait; the flag
    // itself is the atomic, so `is_cancelled` never takes the lock (but
    // once, to trip a token past its expiry and wake its waiters).
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

    /// A token that trips by itself at `expires` (a task's TTL), for
    /// whoever holds a clone: a helper thread sees the TTL as the handler
    /// does.
    pub(crate) fn expiring(expires: Option<SystemTime>) -> CancelToken {
        CancelToken {
            inner: Arc::new(TokenState {
                expires,
                ..TokenState::default()
            }),
        }
    }

    /// Whether the request was cancelled (or its task's TTL ran out).
    pub fn is_cancelled(&self) -> bool {
        if self.inner.cancelled.load(Ordering::Acquire) {
            return true;
        }
        if self.expired() {
            self.cancel();
            return true;
        }
        false
    }

    /// Whether the token's own expiry has passed.
    fn expired(&self) -> bool {
        self.inner.expires.is_some_and(|at| at <= SystemTime::now())
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
        // The flag read under the lock (`cancel` takes it: no trip here).
        while !self.inner.cancelled.load(Ordering::Acquire) {
            if self.expired() {
                self.inner.cancelled.store(true, Ordering::Release);
                self.inner.wake.notify_all();
                break;
            }
            let mut left = match deadline {
                Some(at) => match at.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => left,
                    _ => break,
                },
                None => Duration::from_secs(3600),
            };
            // Awake at the expiry, read on the store's clock again (the
            // monotonic one the wait counts may run apart from it).
            if let Some(at) = self.inner.expires {
                let until = at.duration_since(SystemTime::now()).unwrap_or_default();
                left = left.min(until.max(Duration::from_millis(1)));
            }
            guard = match self.inner.wake.wait_timeout(guard, left) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        // Let go first: an expiry found now trips the token (`cancel`).
        drop(guard);
        self.is_cancelled()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_expiring_token_trips_by_itself_for_every_clone() {
        let token = CancelToken::expiring(Some(SystemTime::now() + Duration::from_millis(50)));
        let clone = token.clone();
        assert!(!clone.is_cancelled());
        let began = Instant::now();
        // Woken at the expiry, not at the end of the hour.
        assert!(clone.wait_timeout(Duration::from_secs(3600)));
        assert!(began.elapsed() < Duration::from_secs(30));
        assert!(token.is_cancelled());
    }

    #[test]
    fn a_token_past_its_expiry_is_cancelled_at_once() {
        let token = CancelToken::expiring(Some(SystemTime::now() - Duration::from_secs(1)));
        assert!(token.wait_timeout(Duration::ZERO));
        assert!(token.wait_timeout(Duration::from_secs(3600)));
        assert!(token.is_cancelled());
    }

    #[test]
    fn a_token_without_expiry_waits_its_timeout() {
        let token = CancelToken::expiring(None);
        let began = Instant::now();
        assert!(!token.wait_timeout(Duration::from_millis(30)));
        assert!(began.elapsed() >= Duration::from_millis(30));
        assert!(!token.is_cancelled());
    }
}

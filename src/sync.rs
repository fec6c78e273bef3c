//! Locks that outlive a panic: a handler or callback that panicked while
//! holding a lock leaves data that is still consistent here (every
//! critical section is a plain read or write), so the lock is taken back
//! instead of failing every later caller.

use std::sync::{Mutex, MutexGuard};

/// Locks `mutex`, taking the data even if a thread panicked holding it.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

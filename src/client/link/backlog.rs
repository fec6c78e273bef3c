//! What the reader handed to a caller or a subscription and the
//! application has not taken yet, bounded in bytes.
//!
//! Why: the reader never waits for the application (every reply behind
//! would wait too), so it hands a request's progress and log messages, and
//! a subscription's events, to channels without a bound, and the
//! application takes them when it waits or reads. Counted in nothing, what
//! a server sends faster than the application takes piled up without end:
//! 96 notifications of 1 MiB for a subscription nobody read held 102 MB.
//! So each such channel has a [`Backlog`], the bytes of JSON text of the
//! notifications in it: counted in by the reader as it sends one, and out
//! when that delivery is dropped (taken, or dropped with its channel).
//! Past the link's limit, the line limit (`ClientBuilder::max_line_bytes`,
//! 16 MiB by default), the reader sends no more, and never waits: a
//! subscription then ends `Overflowed` and is cancelled at the server, a
//! call's progress and log messages are dropped (`route.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crossbeam_channel::{Receiver, Sender};
use serde_json::Value;

use super::SubscriptionDelivery;

/// The bytes of the notifications waiting in one channel.
#[derive(Debug, Default)]
pub(crate) struct Backlog {
    waiting: AtomicUsize,
    /// Set at the first notification refused.
    overflowed: AtomicBool,
}

impl Backlog {
    /// A share of `bytes` for one delivery, unless `limit` would then be
    /// passed while others wait (a notification alone is always taken: the
    /// line limit bounds it). `None`: refused (see
    /// [`first_overflow`](Backlog::first_overflow)).
    pub fn hold(self: &Arc<Backlog>, bytes: usize, limit: usize) -> Option<Held> {
        let waiting = self.waiting.fetch_add(bytes, Ordering::SeqCst);
        if waiting > 0 && waiting.saturating_add(bytes) > limit {
            self.waiting.fetch_sub(bytes, Ordering::SeqCst);
            return None;
        }
        Some(Held {
            bytes,
            backlog: Some(Arc::clone(self)),
        })
    }

    /// Marks the backlog overflowed, after a refusal: whether it was not
    /// already (the first refusal, the one a note is for).
    pub fn first_overflow(&self) -> bool {
        !self.overflowed.swap(true, Ordering::SeqCst)
    }

    /// Whether a notification was ever refused.
    pub fn overflowed(&self) -> bool {
        self.overflowed.load(Ordering::SeqCst)
    }
}

/// One delivery's share of its channel's backlog, given back when the
/// delivery is dropped: the only thing its `Drop` does.
#[derive(Debug)]
pub(crate) struct Held {
    bytes: usize,
    backlog: Option<Arc<Backlog>>,
}

impl Held {
    /// No share: a delivery the reader did not count (one the client made
    /// itself, as a legacy subscription's acknowledgment).
    #[cfg(feature = "legacy")]
    pub fn none() -> Held {
        Held {
            bytes: 0,
            backlog: None,
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(backlog) = &self.backlog {
            backlog.waiting.fetch_sub(self.bytes, Ordering::SeqCst);
        }
    }
}

/// The sending end of a subscription's channel, with its backlog: kept by
/// the link that routes to it, and by the client's live subscriptions,
/// which a restart adopts on the new link.
pub(crate) struct SubscriptionSink {
    tx: Sender<SubscriptionDelivery>,
    backlog: Arc<Backlog>,
    /// Whether the link that holds this sink delivered its listen's
    /// acknowledgment (`route::deliver_tagged`): a listen is acknowledged
    /// once on a connection.
    pub acknowledged: bool,
}

/// A clone is for another connection (a restart's, or the link's own
/// copy): its listen is not acknowledged there yet.
impl Clone for SubscriptionSink {
    fn clone(&self) -> SubscriptionSink {
        SubscriptionSink {
            tx: self.tx.clone(),
            backlog: Arc::clone(&self.backlog),
            acknowledged: false,
        }
    }
}

impl SubscriptionSink {
    /// A subscription's channel.
    pub fn channel() -> (SubscriptionSink, Receiver<SubscriptionDelivery>) {
        // Unbounded: the reader never waits; the backlog bounds it.
        let (tx, rx) = crossbeam_channel::unbounded();
        let sink = SubscriptionSink {
            tx,
            backlog: Arc::default(),
            acknowledged: false,
        };
        (sink, rx)
    }

    /// Sends what the subscription's end or its acknowledgment is made of:
    /// a few per connection, never counted.
    pub fn send(&self, delivery: SubscriptionDelivery) {
        // A subscription dropped meanwhile needs nothing.
        let _ = self.tx.send(delivery);
    }

    /// Sends a notification of `bytes` of JSON, unless more than `limit`
    /// would then wait: `false`, and on the first refusal the subscription
    /// is told it overflowed (its end, after the events it holds). The
    /// caller then cancels it at the server.
    pub fn notify(&self, method: &str, params: Value, bytes: usize, limit: usize) -> bool {
        match self.backlog.hold(bytes, limit) {
            Some(held) => {
                self.send(SubscriptionDelivery::Notification {
                    method: method.to_owned(),
                    params,
                    _held: held,
                });
                true
            }
            None => {
                if self.backlog.first_overflow() {
                    self.send(SubscriptionDelivery::Overflowed);
                }
                false
            }
        }
    }

    /// Whether the subscription overflowed: ended, and not to be sent
    /// again by a restart.
    pub fn overflowed(&self) -> bool {
        self.backlog.overflowed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One notification alone is always taken; past the limit the rest
    /// are refused; a share comes back when its delivery is dropped.
    #[test]
    fn a_backlog_holds_up_to_its_limit_and_gives_back_what_is_dropped() {
        let backlog = Arc::new(Backlog::default());
        let big = backlog.hold(100, 10).expect("alone, whatever its size");
        assert!(backlog.hold(1, 10).is_none());
        assert!(!backlog.overflowed());
        assert!(backlog.first_overflow());
        assert!(!backlog.first_overflow());
        assert!(backlog.overflowed());
        drop(big);
        let a = backlog.hold(6, 10).expect("room again");
        let b = backlog.hold(4, 10).expect("up to the limit");
        assert!(backlog.hold(1, 10).is_none());
        drop((a, b));
        assert_eq!(backlog.waiting.load(Ordering::SeqCst), 0);
    }
}

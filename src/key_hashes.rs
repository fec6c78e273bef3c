//! A set of strings kept as a keyed hash of each ([`KeyHashes`]): the
//! `inputRequests` keys of a task that were answered, or put on the wire.
//!
//! Why hashes: such a key is the peer's, up to the line limit long, and a
//! task may ask under a new one at every poll for as long as it runs
//! (spec extensions/tasks: keys are unique over the task's life, so the
//! side that answers must remember each one, as a lagging poll may list
//! it again). Kept whole, the keys of a task that asks for a long time
//! grow the process by a line a poll; kept as hashes, each costs 8 bytes
//! however long it is. The client following a task
//! (`TaskHandle::follow`), the proxy following a task behind it
//! (`proxy::follow_task`) and a task of the server asking through its
//! context (`TaskLink::ask`, which the proxy's asks go through with the
//! keys of the server behind) keep their keys here.
//!
//! The hasher's keys are random (`RandomState`): a peer cannot choose keys
//! that collide. Two keys collide by chance about one in 2^64 for a pair;
//! the second then reads as known (for an answer: never given, and the task
//! waits for it; for a key on the wire: renamed, which costs nothing).

use std::collections::HashSet;
use std::fmt;
use std::hash::{BuildHasher, RandomState};

/// Strings by a keyed 64-bit hash of each (see the module's docs).
#[derive(Default)]
pub(crate) struct KeyHashes {
    hashes: HashSet<u64>,
    hasher: RandomState,
}

impl KeyHashes {
    /// Whether `key` is in the set (or, by a chance of one in 2^64 for a
    /// pair, a key whose hash is the same).
    pub fn contains(&self, key: &str) -> bool {
        self.hashes.contains(&self.hasher.hash_one(key))
    }

    /// Puts `key` in the set; `false` if it was there.
    pub fn insert(&mut self, key: &str) -> bool {
        let hash = self.hasher.hash_one(key);
        self.hashes.insert(hash)
    }

    /// How many keys the set holds.
    pub fn len(&self) -> usize {
        self.hashes.len()
    }
}

impl fmt::Debug for KeyHashes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyHashes({} keys)", self.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hundred keys of 100 KiB each: the set finds each, no other, and
    /// holds its table of 8-byte hashes, not the 10 MiB of keys.
    #[test]
    fn a_key_costs_eight_bytes_however_long_it_is() {
        let key = |n: usize| format!("k{n}-{}", "x".repeat(100 * 1024));
        let mut keys = KeyHashes::default();
        for n in 0..100 {
            assert!(keys.insert(&key(n)));
        }
        assert!(!keys.insert(&key(7)), "a key already in the set");
        assert!((0..100).all(|n| keys.contains(&key(n))));
        assert!(!keys.contains(&key(100)));
        assert!(!keys.contains("k7"));
        assert_eq!(keys.len(), 100);
        let held = keys.hashes.capacity() * std::mem::size_of::<u64>();
        assert!(held <= 4096, "the set holds {held} bytes for 100 keys");
    }
}

//! Deadlines from durations a caller chose, which may be as long as
//! `Duration::MAX` ("no limit"): `Instant + Duration` panics past what an
//! `Instant` holds, so a deadline that far off is a century from now
//! instead, later than anything waits.

use std::time::{Duration, Instant};

/// A century: the deadline of a wait with no limit.
const FAR: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

/// The instant `from` plus `after`, or a century after `from` when that
/// is past what an `Instant` holds.
pub(crate) fn after(from: Instant, after: Duration) -> Instant {
    from.checked_add(after).unwrap_or_else(|| from + FAR)
}

/// The instant `after` from now (see [`after`]).
pub(crate) fn from_now(after: Duration) -> Instant {
    self::after(Instant::now(), after)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_duration_is_a_century_and_a_short_one_is_itself() {
        let now = Instant::now();
        assert_eq!(after(now, Duration::MAX), now + FAR);
        assert_eq!(
            after(now, Duration::from_secs(5)),
            now + Duration::from_secs(5)
        );
        assert!(from_now(Duration::MAX) > now + FAR / 2);
    }
}

use super::*;

#[test]
fn the_poll_interval_is_the_servers_within_bounds() {
    assert_eq!(poll_interval(None), DEFAULT_POLL_INTERVAL);
    assert_eq!(poll_interval(Some(200)), Duration::from_millis(200));
    assert_eq!(poll_interval(Some(0)), MIN_POLL_INTERVAL);
    assert_eq!(poll_interval(Some(u64::MAX)), MAX_POLL_INTERVAL);
}

#[test]
fn a_huge_timeout_still_makes_a_deadline() {
    assert!(deadline_after(Duration::MAX) > Instant::now());
}

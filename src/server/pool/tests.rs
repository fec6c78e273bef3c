use super::*;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// A job that is all one step that may block, `handler`.
fn job(handler: impl FnOnce() + Send + 'static) -> Job {
    Box::new(move |blocking| blocking.may_block(handler))
}

/// (alive, idle, blocked)
fn counts(pool: &Pool) -> (usize, usize, usize) {
    let counts = pool.threads.lock();
    (counts.alive, counts.idle, counts.blocked)
}

fn wait_for(pool: &Pool, what: &str, done: impl Fn((usize, usize, usize)) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !done(counts(pool)) {
        assert!(Instant::now() < deadline, "{what}: {:?}", counts(pool));
        thread::yield_now();
    }
}

#[test]
fn jobs_behind_blocked_handlers_get_threads_of_their_own() {
    let pool = Pool::new(1, Duration::ZERO);
    let (started, starts) = crossbeam_channel::unbounded();
    let (release, gate) = crossbeam_channel::unbounded::<()>();
    for i in 0..3 {
        let (started, gate) = (started.clone(), gate.clone());
        pool.submit(job(move || {
            started.send(i).unwrap();
            gate.recv().unwrap();
        }));
    }
    // All three run at once, although one thread was warm.
    let mut seen: Vec<i32> = (0..3)
        .map(|_| starts.recv_timeout(Duration::from_secs(5)).unwrap())
        .collect();
    seen.sort();
    assert_eq!(seen, [0, 1, 2]);
    assert_eq!(counts(&pool), (3, 0, 3));
    for _ in 0..3 {
        release.send(()).unwrap();
    }
    // Once they are idle, the next job takes one of them.
    wait_for(&pool, "the threads never came back", |(_, idle, _)| {
        idle == 3
    });
    let (done, finished) = crossbeam_channel::bounded(1);
    pool.submit(job(move || done.send(()).unwrap()));
    finished.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(counts(&pool).0, 3);
}

#[test]
fn quick_jobs_behind_a_blocked_handler_run_while_it_blocks() {
    let pool = Pool::new(1, Duration::ZERO);
    let (release, held) = crossbeam_channel::bounded::<()>(0);
    pool.submit(job(move || {
        let _ = held.recv();
    }));
    let (done, finished) = crossbeam_channel::unbounded();
    for _ in 0..10_000 {
        let done = done.clone();
        pool.submit(job(move || done.send(()).unwrap()));
    }
    for _ in 0..10_000 {
        finished.recv_timeout(Duration::from_secs(5)).unwrap();
    }
    // Not a thread per job: a thread busy finishing is waited for.
    // (The last quick job's thread may still be in its step, having
    // said it is done: the count comes back to the blocked handler.)
    assert!(
        counts(&pool).0 < 100,
        "{:?} threads for 10,000 quick jobs",
        counts(&pool)
    );
    wait_for(
        &pool,
        "blocked, besides the blocked handler",
        |(_, _, blocked)| blocked == 1,
    );
    drop(release);
}

#[test]
fn a_thread_between_blocking_steps_is_waited_for_not_replaced() {
    // Between its blocking steps a job does the server's own work
    // (encoding a reply, writing it into the output): jobs wait for
    // its thread, and run once it is done.
    let pool = Pool::new(1, Duration::ZERO);
    let (release, held) = crossbeam_channel::bounded::<()>(0);
    let (between, reached) = crossbeam_channel::bounded(1);
    pool.submit(Box::new(move |_| {
        between.send(()).unwrap();
        let _ = held.recv();
    }));
    reached.recv_timeout(Duration::from_secs(5)).unwrap();
    let (done, finished) = crossbeam_channel::unbounded();
    for _ in 0..100 {
        let done = done.clone();
        pool.submit(job(move || done.send(()).unwrap()));
    }
    thread::sleep(Duration::from_millis(50));
    assert_eq!(counts(&pool), (1, 0, 0));
    assert!(
        finished.is_empty(),
        "a job ran while the only thread was busy"
    );
    drop(release);
    for _ in 0..100 {
        finished.recv_timeout(Duration::from_secs(5)).unwrap();
    }
}

#[test]
fn a_burst_behind_blocked_threads_starts_one_thread_at_a_time() {
    // Every thread blocked (as when all are sending to clients that
    // do not read) and 10,000 jobs at once: not a thread each.
    let pool = Pool::new(2, Duration::ZERO);
    let (release, held) = crossbeam_channel::unbounded::<()>();
    for _ in 0..2 {
        let held = held.clone();
        pool.submit(job(move || {
            let _ = held.recv();
        }));
    }
    wait_for(&pool, "the two never blocked", |(_, _, blocked)| {
        blocked == 2
    });
    let (done, finished) = crossbeam_channel::unbounded();
    for _ in 0..10_000 {
        let done = done.clone();
        pool.submit(Box::new(move |_| done.send(()).unwrap()));
    }
    for _ in 0..10_000 {
        finished.recv_timeout(Duration::from_secs(5)).unwrap();
    }
    let (alive, _, _) = counts(&pool);
    assert_eq!(alive, 3, "one thread for the jobs behind the two blocked");
    drop(release);
}

#[test]
fn a_job_that_panics_leaves_the_counts_true() {
    // The connection's jobs catch their handlers' panics (`work::call`),
    // but not a panic in what follows (the reply's encoding, the
    // finish): a thread that unwinds must not stay counted alive, nor
    // blocked, or the pool keeps one thread fewer than it says, for good.
    let pool = Pool::new(1, Duration::ZERO);
    let (panicking, panics) = crossbeam_channel::bounded(1);
    pool.submit(job(move || {
        panicking.send(()).unwrap();
        panic!("a job that panics (this panic is the test's)");
    }));
    panics.recv_timeout(Duration::from_secs(5)).unwrap();
    let (done, finished) = crossbeam_channel::bounded(1);
    pool.submit(job(move || done.send(()).unwrap()));
    finished.recv_timeout(Duration::from_secs(5)).unwrap();
    wait_for(
        &pool,
        "a thread counted that is gone",
        |(alive, idle, blocked)| alive == idle && blocked == 0,
    );
}

#[test]
fn jobs_submitted_at_once_each_get_a_thread_when_the_others_block() {
    // Jobs submitted from several threads at once (readers of several
    // connections, workers starting queued requests), one idle thread
    // for them: each must start while the others block, however the
    // submits and the idle thread's taking interleave. (The pool before
    // this one once let two submits count the same idle thread, and
    // the second job waited until the first returned.)
    let started_at = Instant::now();
    let mut rounds = 0;
    while started_at.elapsed() < Duration::from_secs(2) {
        rounds += 1;
        let pool = Arc::new(Pool::new(1, Duration::ZERO));
        let (done, finished) = crossbeam_channel::bounded(1);
        pool.submit(job(move || done.send(()).unwrap()));
        finished.recv().unwrap();
        wait_for(&pool, "the thread never came back", |(_, idle, _)| {
            idle == 1
        });
        let (started, starts) = crossbeam_channel::unbounded();
        let (release, gate) = crossbeam_channel::unbounded::<()>();
        let go = Arc::new(AtomicBool::new(false));
        let submitters: Vec<_> = (0..2)
            .map(|_| {
                let (pool, started, gate) = (pool.clone(), started.clone(), gate.clone());
                let go = go.clone();
                thread::spawn(move || {
                    // Both submit at the same moment.
                    while !go.load(Ordering::Acquire) {
                        std::hint::spin_loop();
                    }
                    pool.submit(job(move || {
                        let _ = started.send(());
                        let _ = gate.recv();
                    }));
                })
            })
            .collect();
        go.store(true, Ordering::Release);
        submitters.into_iter().for_each(|t| t.join().unwrap());
        for job in 0..2 {
            let start = starts.recv_timeout(Duration::from_secs(2));
            assert!(
                start.is_ok(),
                "round {rounds}: job {job} of 2 never started"
            );
        }
        drop(release);
    }
}

#[test]
fn a_thread_spinning_however_long_ends_with_the_pool() {
    let pool = Pool::new(1, Duration::MAX);
    let (done, finished) = crossbeam_channel::bounded(1);
    pool.submit(job(move || done.send(()).unwrap()));
    finished.recv_timeout(Duration::from_secs(5)).unwrap();
    let threads = Arc::clone(&pool.threads);
    // Spinning now, for ever if nothing told it the pool is gone.
    while !threads.lock().spinning {
        thread::yield_now();
    }
    drop(pool);
    let deadline = Instant::now() + Duration::from_secs(5);
    while threads.lock().alive > 0 {
        assert!(
            Instant::now() < deadline,
            "the spinning thread outlived its pool"
        );
        thread::yield_now();
    }
}

#[test]
fn a_send_waits_for_no_thread_start_of_the_blocking_jobs_before_it() {
    // Blocking jobs that wait for the send (as handlers may wait for
    // the client's reaction to a reply the send carries).
    let pool = Pool::new(1, Duration::ZERO);
    let started = Arc::new(AtomicUsize::new(0));
    let (release, gate) = crossbeam_channel::unbounded::<()>();
    for _ in 0..5 {
        let (started, gate) = (Arc::clone(&started), gate.clone());
        pool.submit(job(move || {
            started.fetch_add(1, Ordering::SeqCst);
            let _ = gate.recv_timeout(Duration::from_secs(5));
        }));
    }
    let (sent, sends) = crossbeam_channel::unbounded();
    let before = Arc::clone(&started);
    pool.submit_send(Box::new(move |_| {
        sent.send(before.load(Ordering::SeqCst)).unwrap();
        drop(release);
    }));
    let behind = sends.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(
        behind < 5,
        "the send ran after all 5 blocking jobs had a thread"
    );
    wait_for(&pool, "all idle", |(alive, idle, blocked)| {
        idle == alive && blocked == 0
    });
}

#[test]
fn quick_jobs_do_not_grow_the_pool() {
    let pool = Pool::new(1, Duration::ZERO);
    let (done, finished) = crossbeam_channel::unbounded();
    for _ in 0..10_000 {
        let done = done.clone();
        pool.submit(job(move || done.send(()).unwrap()));
    }
    for _ in 0..10_000 {
        finished.recv_timeout(Duration::from_secs(5)).unwrap();
    }
    // Nothing like a thread per job (a loaded machine may stop a
    // thread in a handler now and then).
    let alive = counts(&pool).0;
    assert!(alive < 100, "{alive} threads for 10,000 quick jobs");
}

#[test]
fn a_job_that_panics_between_its_blocking_steps_leaves_the_counts_true() {
    // A panic outside `may_block` (in a reply's encoding, in the
    // finish): the thread is neither blocked nor gone, and the next
    // job still runs, on it.
    let pool = Pool::new(1, Duration::ZERO);
    let (panicking, panics) = crossbeam_channel::bounded(1);
    pool.submit(Box::new(move |_| {
        panicking.send(()).unwrap();
        panic!("a job that panics between its steps (this panic is the test's)");
    }));
    panics.recv_timeout(Duration::from_secs(5)).unwrap();
    wait_for(&pool, "the thread never came back", |(_, idle, _)| {
        idle == 1
    });
    let (done, finished) = crossbeam_channel::bounded(1);
    pool.submit(job(move || done.send(()).unwrap()));
    finished.recv_timeout(Duration::from_secs(5)).unwrap();
    wait_for(&pool, "counts that drifted", |counts| counts == (1, 1, 0));
}

#[test]
fn a_job_waiting_for_a_job_it_submitted_gets_it_run() {
    // A send job hands what was written meanwhile to the pool as a job
    // of its own, before it blocks on nothing: with one thread, the job
    // it submitted must not wait for it.
    let pool = Arc::new(Pool::new(1, Duration::ZERO));
    let (done, finished) = crossbeam_channel::bounded(1);
    let of_job = Arc::clone(&pool);
    pool.submit(Box::new(move |blocking| {
        let (inner_done, inner_finished) = crossbeam_channel::bounded(1);
        of_job.submit(job(move || inner_done.send(()).unwrap()));
        let ran = blocking.may_block(|| inner_finished.recv_timeout(Duration::from_secs(5)));
        done.send(ran.is_ok()).unwrap();
    }));
    let ran = finished.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(ran, "the job submitted by a job waited for it");
}

#[test]
fn blocking_jobs_submitted_from_many_threads_each_get_a_thread() {
    // Five submitters, ten jobs each, every job blocks until all fifty
    // started: each must get a thread, however the submits, the thread
    // starts (one at a time) and the blocks interleave.
    let started_at = Instant::now();
    let mut rounds = 0;
    while started_at.elapsed() < Duration::from_secs(2) {
        rounds += 1;
        let pool = Arc::new(Pool::new(1, Duration::ZERO));
        let (started, starts) = crossbeam_channel::unbounded();
        let (release, gate) = crossbeam_channel::unbounded::<()>();
        let submitters: Vec<_> = (0..5)
            .map(|_| {
                let (pool, started, gate) = (pool.clone(), started.clone(), gate.clone());
                thread::spawn(move || {
                    for _ in 0..10 {
                        let (started, gate) = (started.clone(), gate.clone());
                        pool.submit(job(move || {
                            let _ = started.send(());
                            let _ = gate.recv();
                        }));
                    }
                })
            })
            .collect();
        submitters.into_iter().for_each(|t| t.join().unwrap());
        for n in 0..50 {
            let start = starts.recv_timeout(Duration::from_secs(5));
            assert!(start.is_ok(), "round {rounds}: job {n} of 50 never started");
        }
        drop(release);
    }
}

#[test]
fn jobs_waiting_when_the_pool_is_dropped_still_run() {
    // A send job queued behind a busy thread when the server lets its
    // pool go: its lines must still go out.
    let pool = Pool::new(1, Duration::ZERO);
    let (release, held) = crossbeam_channel::bounded::<()>(0);
    let (between, reached) = crossbeam_channel::bounded(1);
    pool.submit(Box::new(move |_| {
        between.send(()).unwrap();
        let _ = held.recv();
    }));
    reached.recv_timeout(Duration::from_secs(5)).unwrap();
    let (done, finished) = crossbeam_channel::bounded(1);
    pool.submit(Box::new(move |_| done.send(()).unwrap()));
    drop(pool);
    drop(release);
    assert!(
        finished.recv_timeout(Duration::from_secs(5)).is_ok(),
        "a job queued when the pool was dropped never ran"
    );
}

/// A pool dropped while its thread is busy and jobs and sends wait:
/// the thread runs every one of them before it ends, spinning or not
/// (`Threads::try_next` says the pool is gone only once both are
/// empty), and ends (no spin for ever on the closed channel).
#[test]
fn a_dropped_pool_runs_every_job_and_send_left_then_its_threads_end() {
    for spin in [Duration::ZERO, Duration::from_millis(50)] {
        let pool = Pool::new(1, spin);
        let threads = Arc::clone(&pool.threads);
        let (release, gate) = crossbeam_channel::unbounded::<()>();
        let (started, starts) = crossbeam_channel::unbounded();
        // One job that does not say it blocks: no other thread starts.
        pool.submit(Box::new(move |_| {
            started.send(()).unwrap();
            gate.recv().unwrap();
        }));
        starts.recv_timeout(Duration::from_secs(5)).unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        for i in 0..6 {
            let ran = Arc::clone(&ran);
            let job: Job = Box::new(move |_| {
                ran.fetch_add(1, Ordering::SeqCst);
            });
            if i % 2 == 0 {
                pool.submit(job);
            } else {
                pool.submit_send(job);
            }
        }
        drop(pool);
        release.send(()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while threads.lock().alive > 0 {
            assert!(Instant::now() < deadline, "a thread never ended ({spin:?})");
            thread::yield_now();
        }
        assert_eq!(ran.load(Ordering::SeqCst), 6, "jobs left behind ({spin:?})");
    }
}

use super::*;
use std::sync::{Arc, Mutex};

/// What reached the writer, one entry per `write`.
#[derive(Clone, Default)]
struct Flushed(Arc<Mutex<Vec<Vec<u8>>>>);

impl Write for Flushed {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().push(bytes.to_vec());
        Ok(bytes.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Flushed {
    fn all(&self) -> Vec<u8> {
        self.0.lock().unwrap().concat()
    }
}

fn line(text: &[u8]) -> impl FnOnce(&mut Out) -> serde_json::Result<()> + '_ {
    move |out| {
        out.push(text);
        Ok(())
    }
}

#[test]
fn lines_go_out_when_sent_and_nothing_once_closed() {
    let flushed = Flushed::default();
    let mut output = Output::new(Writer::Bytes(Box::new(flushed.clone())));
    output.write_line(LineKind::Message, line(b"reply"));
    assert!(flushed.all().is_empty(), "writing only collects");
    let mut detached = output.detach().expect("something to send");
    // Written while the send is in progress: sent next.
    output.write_line(LineKind::Message, line(b"next"));
    assert!(output.detach().is_none(), "one send at a time");
    let sent = detached.send();
    assert!(!output.attach(detached, sent).0);
    assert_eq!(flushed.all(), b"reply\n");
    let mut detached = output.detach().expect("what waited");
    let sent = detached.send();
    output.attach(detached, sent);
    assert_eq!(flushed.all(), b"reply\nnext\n");
    assert!(output.detach().is_none(), "nothing waits");
    output.write_line(LineKind::Message, line(b"dropped at close"));
    let (writer, error) = output.close();
    assert!(writer.is_some() && error.is_none());
    output.write_line(LineKind::Message, line(b"after close"));
    assert_eq!(output.waiting(), 0);
    assert_eq!(flushed.all(), b"reply\nnext\n");
}

/// The client's clock moves as the writer of a send in progress takes
/// each 16 KiB, not only when the next send begins (the rule for a
/// client too slow to keep looks at it:
/// `slow_client::a_steady_slow_reader_gets_every_reply_with_a_short_grace`).
#[test]
fn the_clock_moves_while_a_send_is_in_progress() {
    struct Pages;
    impl Write for Pages {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            std::thread::sleep(Duration::from_millis(1));
            Ok(bytes.len().min(4096))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut output = Output::new(Writer::Bytes(Box::new(Pages)));
    output.push_line(LineKind::Message, vec![b'x'; 40 * 1024]);
    let mut detached = output.detach().unwrap();
    let began = output.sent.at.load(Ordering::Relaxed);
    let sent = detached.send();
    assert!(sent.is_ok());
    assert!(
        output.sent.at.load(Ordering::Relaxed) > began,
        "the clock stood still through 40 KiB"
    );
    output.attach(detached, sent);
}

/// A byte stream that takes an irregular part of what it is handed
/// (1 to all of it), recording each `write` it was handed.
struct Irregular {
    got: Vec<u8>,
    asked: Vec<usize>,
    seed: u64,
}

impl Write for Irregular {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.asked.push(bytes.len());
        self.seed = self.seed.wrapping_mul(6364136223846793005).wrapping_add(1);
        let n = 1 + (self.seed >> 33) as usize % bytes.len();
        self.got.extend_from_slice(&bytes[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A reply of 16 MiB between small lines reaches a writer that takes
/// irregular parts whole and in order, handed at most
/// [`WRITE_AT_MOST`] a `write`, and every byte is counted.
#[test]
fn a_large_reply_reaches_an_irregular_writer_whole_in_order_in_pieces() {
    let shared = Arc::new(Mutex::new(Irregular {
        got: Vec::new(),
        asked: Vec::new(),
        seed: 7,
    }));
    struct Share(Arc<Mutex<Irregular>>);
    impl Write for Share {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().write(bytes)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut output = Output::new(Writer::Bytes(Box::new(Share(Arc::clone(&shared)))));
    let large: Vec<u8> = (0..16 * 1024 * 1024)
        .map(|i| b'a' + (i % 26) as u8)
        .collect();
    output.write_line(LineKind::Message, line(b"before"));
    output.push_line(LineKind::Message, large.clone());
    output.write_line(LineKind::Message, line(b"after"));
    let mut detached = output.detach().unwrap();
    let sent = detached.send();
    assert!(sent.is_ok());
    output.attach(detached, sent);
    let mut want = b"before\n".to_vec();
    want.extend_from_slice(&large);
    want.extend_from_slice(b"\nafter\n");
    let irregular = shared.lock().unwrap();
    assert!(irregular.got == want, "whole and in order");
    assert!(irregular.asked.iter().all(|&n| n <= WRITE_AT_MOST));
}

/// The let-go's clock moves when a send begins, and then once the
/// client took a piece's worth since it last moved: a page taken now
/// and then does not move it (a client reading 800 bytes a second held
/// every publisher at its pace).
#[test]
fn the_clock_moves_once_a_piece_is_taken_not_with_every_page() {
    let took = Took::default();
    let at = || took.at.load(Ordering::Relaxed);
    took.began();
    let began = at();
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(1));
        took.add(4096);
        assert_eq!(at(), began, "a page moved the clock");
    }
    std::thread::sleep(Duration::from_millis(1));
    took.add(4096);
    assert!(at() > began, "16 KiB in pages did not move it");
    let moved = at();
    std::thread::sleep(Duration::from_millis(1));
    took.add(4096);
    assert_eq!(at(), moved, "the count starts again after it moved");
    std::thread::sleep(Duration::from_millis(1));
    took.began();
    assert!(at() > moved, "a send's beginning did not move it");
}

/// A writer that takes nothing (`Ok(0)`) fails the send, and does not
/// move the client's clock: only a send's beginning and bytes taken do.
#[test]
fn a_writer_that_takes_nothing_fails_and_leaves_the_clock_alone() {
    struct Nothing;
    impl Write for Nothing {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            std::thread::sleep(Duration::from_millis(20));
            Ok(0)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut output = Output::new(Writer::Bytes(Box::new(Nothing)));
    output.write_line(LineKind::Message, line(b"never taken"));
    let mut detached = output.detach().unwrap();
    let began = output.idle();
    let sent = detached.send();
    assert_eq!(
        sent.as_ref().map_err(io::Error::kind).err(),
        Some(io::ErrorKind::WriteZero)
    );
    assert!(output.idle() >= began + Duration::from_millis(20));
    output.write_line(LineKind::Message, line(b"while sending"));
    assert!(output.detach().is_none(), "no send begins while one is out");
    assert!(
        output.idle() >= Duration::from_millis(20),
        "nor resets the clock"
    );
    assert!(output.attach(detached, sent).0);
}

#[test]
fn a_line_longer_than_the_buffer_goes_out_whole_in_one_send() {
    let flushed = Flushed::default();
    let mut output = Output::new(Writer::Bytes(Box::new(flushed.clone())));
    let long = vec![b'x'; 3 * BUFFER];
    output.write_line(LineKind::Message, line(b"short"));
    output.write_line(LineKind::Message, line(&long));
    assert_eq!(flushed.all(), b"", "nothing is written under the lock");
    let mut detached = output.detach().unwrap();
    let sent = detached.send();
    output.attach(detached, sent);
    let writes = flushed.0.lock().unwrap().clone();
    // One send: both lines whole, in order, in `write(2)`s of at most
    // `WRITE_AT_MOST` each.
    let mut expected = b"short\n".to_vec();
    expected.extend_from_slice(&long);
    expected.push(b'\n');
    assert_eq!(writes.concat(), expected);
    assert!(writes.iter().all(|w| w.len() <= WRITE_AT_MOST));
    assert!(
        output.spare.capacity() <= 2 * BUFFER,
        "a grown buffer is not kept"
    );
}

#[test]
fn a_large_line_is_moved_in_and_sent_in_its_place() {
    let flushed = Flushed::default();
    let mut output = Output::new(Writer::Bytes(Box::new(flushed.clone())));
    // Room for the newline, so that pushing it cannot move the bytes.
    let mut large = Vec::with_capacity(2 * BUFFER + 1);
    large.resize(2 * BUFFER, b'L');
    let at = large.as_ptr();
    output.write_line(LineKind::Message, line(b"before"));
    output.push_line(LineKind::Message, large);
    assert_eq!(output.queued[1].as_ptr(), at, "moved, not copied");
    output.push_line(LineKind::Message, b"after".to_vec());
    assert_eq!(output.waiting(), 7 + 2 * BUFFER + 1 + 6);
    let mut detached = output.detach().unwrap();
    let sent = detached.send();
    output.attach(detached, sent);
    let mut want = b"before\n".to_vec();
    want.extend_from_slice(&[b'L'; 2 * BUFFER]);
    want.extend_from_slice(b"\nafter\n");
    assert_eq!(flushed.all(), want);
    assert_eq!(output.waiting(), 0);
}

#[test]
fn a_line_whose_encoding_fails_is_taken_back() {
    let mut output = Output::new(Writer::Bytes(Box::new(Flushed::default())));
    output.write_line(LineKind::Message, line(b"kept"));
    output.write_line(LineKind::Message, |out| {
        out.push(b"{\"half");
        Err(serde::ser::Error::custom("cannot encode"))
    });
    assert_eq!(output.lines.as_slice(), b"kept\n");
}

#[test]
fn a_writer_knows_when_its_lines_are_on_their_way() {
    let mut output = Output::new(Writer::Bytes(Box::new(Flushed::default())));
    output.write_line(LineKind::Message, line(b"one"));
    let mine = output.written();
    assert!(!output.taken(mine), "written, not taken");
    let mut detached = output.detach().unwrap();
    assert!(output.taken(mine), "taken by the send in progress");
    output.write_line(LineKind::Message, line(b"two"));
    assert!(!output.taken(output.written()), "written behind the send");
    let sent = detached.send();
    output.attach(detached, sent);
    assert!(!output.taken(output.written()), "nobody took it yet");
    let mut detached = output.detach().unwrap();
    let sent = detached.send();
    output.attach(detached, sent);
    assert!(output.taken(output.written()));
}

/// Closed or given up on while a send is out: no second send starts
/// (the writer is out, and nothing more is written), every writer's
/// lines count as taken so nobody waits for them, nothing counts as
/// sending any more, and the writer, when it comes back, is handed to
/// the caller to drop rather than kept: only the bytes of the send in
/// progress reach it, whole.
#[test]
fn closed_or_given_up_on_with_a_send_out_no_other_send_starts() {
    for give_up in [false, true] {
        let flushed = Flushed::default();
        let mut output = Output::new(Writer::Bytes(Box::new(flushed.clone())));
        output.write_line(LineKind::Message, line(b"out"));
        let mut detached = output.detach().expect("something to send");
        assert!(output.sending());
        output.write_line(LineKind::Message, line(b"behind it"));
        if give_up {
            let writer = output.give_up(io::Error::from(io::ErrorKind::TimedOut));
            assert!(writer.is_none(), "the send has the writer");
        } else {
            let (writer, error) = output.close();
            assert!(writer.is_none() && error.is_none());
        }
        assert!(!output.sending() && output.is_closed());
        assert!(output.taken(output.written()), "nobody waits for theirs");
        output.write_line(LineKind::Message, line(b"after"));
        assert_eq!(output.waiting(), 0);
        assert!(output.detach().is_none(), "a second send on the writer");
        let sent = detached.send();
        let (failed, orphan) = output.attach(detached, sent);
        assert!(!failed && orphan.is_some(), "the writer goes to be dropped");
        assert!(!output.sending() && output.detach().is_none());
        assert_eq!(flushed.all(), b"out\n");
    }
}

struct Broken;

impl Write for Broken {
    fn write(&mut self, _: &[u8]) -> io::Result<usize> {
        Err(io::Error::from(io::ErrorKind::BrokenPipe))
    }
    fn flush(&mut self) -> io::Result<()> {
        Err(io::Error::from(io::ErrorKind::BrokenPipe))
    }
}

#[test]
fn the_first_failure_is_reported_once_and_kept() {
    let mut output = Output::new(Writer::Bytes(Box::new(Broken)));
    output.write_line(LineKind::Message, line(b"buffered"));
    let mut detached = output.detach().unwrap();
    output.write_line(LineKind::Message, line(b"behind it"));
    let sent = detached.send();
    assert!(output.attach(detached, sent).0, "this send failed");
    assert_eq!(output.waiting(), 0, "what waited is dropped");
    output.write_line(LineKind::Message, line(b"x"));
    assert!(output.detach().is_none(), "nothing after a failure");
    assert_eq!(
        output.close().1.map(|e| e.kind()),
        Some(io::ErrorKind::BrokenPipe)
    );
}

/// A line and its kind, as a writer of lines was given it.
type Line = (LineKind, Vec<u8>);

/// What a writer of lines was given.
#[derive(Clone, Default)]
struct Told(Arc<Mutex<Vec<Line>>>);

impl LineWriter for Told {
    fn line(&mut self, kind: LineKind, line: &[u8]) -> io::Result<()> {
        self.0.lock().unwrap().push((kind, line.to_vec()));
        Ok(())
    }
}

#[test]
fn a_writer_of_lines_is_told_each_line_and_its_kind() {
    let told = Told::default();
    let mut output = Output::new(Writer::Lines(Box::new(told.clone())));
    let error = LineKind::Response {
        error: Some(-32601),
    };
    let large = vec![b'L'; 2 * BUFFER];
    output.write_line(LineKind::Message, line(b"progress"));
    output.push_line(LineKind::Message, large.clone());
    output.write_line(error, line(b"reply"));
    let mut detached = output.detach().unwrap();
    let sent = detached.send();
    output.attach(detached, sent);
    output.push_line(LineKind::Response { error: None }, b"next".to_vec());
    let mut detached = output.detach().unwrap();
    let sent = detached.send();
    output.attach(detached, sent);
    assert_eq!(
        *told.0.lock().unwrap(),
        [
            (LineKind::Message, b"progress".to_vec()),
            (LineKind::Message, large),
            (error, b"reply".to_vec()),
            (LineKind::Response { error: None }, b"next".to_vec()),
        ]
    );
}

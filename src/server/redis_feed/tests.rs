use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Instant;

use super::*;

/// One command of the Redis protocol (an array of bulk strings), or
/// `None` at the end of the stream.
fn read_command(input: &mut BufReader<TcpStream>) -> Option<Vec<Vec<u8>>> {
    let mut line = String::new();
    input.read_line(&mut line).ok().filter(|n| *n > 0)?;
    let count: usize = line.trim().strip_prefix('*')?.parse().ok()?;
    let mut args = Vec::new();
    for _ in 0..count {
        line.clear();
        input.read_line(&mut line).ok()?;
        let len: usize = line.trim().strip_prefix('$')?.parse().ok()?;
        let mut arg = vec![0; len + 2];
        input.read_exact(&mut arg).ok()?;
        arg.truncate(len);
        args.push(arg);
    }
    Some(args)
}

/// A Redis that answers every command, except `PUBLISH` on its first
/// connection: that one it reads and never answers, as a Redis that
/// hangs or a network that lost it without a reset would.
fn redis_that_goes_silent() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("redis://{}/", listener.local_addr().unwrap());
    thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let stream = stream.unwrap();
            thread::spawn(move || {
                let mut output = stream.try_clone().unwrap();
                let mut input = BufReader::new(stream);
                while let Some(command) = read_command(&mut input) {
                    let reply: &[u8] = match command[0].to_ascii_uppercase().as_slice() {
                        b"PUBLISH" if n == 0 => continue,
                        b"PUBLISH" => b":0\r\n",
                        _ => b"+OK\r\n",
                    };
                    output.write_all(reply).unwrap();
                }
            });
        }
    });
    url
}

#[test]
fn a_message_verifies_only_unchanged_under_its_key_and_on_its_channel() {
    let key = [3; 32];
    let body = br#"{"from":"a","at":1,"seq":1,"change":{"kind":"toolsListChanged"}}"#;
    let signed = sign(&key, "changes", body);
    assert_eq!(verify(&key, "changes", &signed), Some(&body[..]));
    assert_eq!(verify(&[4; 32], "changes", &signed), None, "another key");
    assert_eq!(verify(&key, "other", &signed), None, "another channel");
    let mut changed = signed.clone();
    *changed.last_mut().unwrap() = b']';
    assert_eq!(verify(&key, "changes", &changed), None, "a changed body");
    assert_eq!(verify(&key, "changes", body), None, "unsigned");
    assert_eq!(verify(&key, "changes", &signed[..40]), None, "cut short");
}

#[test]
fn messages_of_one_sender_are_taken_once_and_in_order() {
    let mut heard = Heard::new();
    assert!(heard.take("a", 1));
    assert!(heard.take("a", 2));
    assert!(!heard.take("a", 2), "sent twice");
    assert!(!heard.take("a", 1), "replayed");
    assert!(heard.take("b", 1), "another sender");
    assert!(heard.take("a", 7));
}

#[test]
fn a_redis_that_stops_answering_is_left_for_a_new_connection() {
    let feed = RedisChangeFeed::open(&redis_that_goes_silent(), "changes").unwrap();
    feed.send(&Change::ToolsListChanged);
    // Without a read timeout the publisher waits for the silent
    // connection for ever (until the kernel gives up), and every change
    // after it with it.
    let deadline = Instant::now() + REPLY + Duration::from_secs(5);
    while feed.published() == 0 {
        assert!(
            Instant::now() < deadline,
            "the change is still waiting for a Redis that does not answer"
        );
        thread::sleep(Duration::from_millis(20));
    }
    feed.send(&Change::ToolsListChanged);
    while feed.published() < 2 {
        assert!(
            Instant::now() < deadline,
            "the next change is not published"
        );
        thread::sleep(Duration::from_millis(20));
    }
}

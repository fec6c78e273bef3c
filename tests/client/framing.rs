//! Framing on the wire from the server's side (issue 42): a server that
//! writes blank lines, `\r\n`, whitespace-only lines, split writes or the
//! start of its next message around its replies delays and loses none of
//! them. The fake keeps its stdout open and writes nothing more until the
//! client's next request, so a reply the client held back for more input
//! would time out.

use super::*;

/// The cases, by tool name: how `odd-framing` writes the answer to a
/// `tools/call` of that tool.
const CASES: &[&str] = &[
    "plain",
    "blank-line-before",
    "blank-line-after",
    "crlf",
    "crlf-then-blank-crlf",
    "whitespace-line-after",
    "split-across-writes",
    "byte-by-byte",
    "start-of-the-next-message-after",
    "blank-line-then-start-of-the-next",
];

/// A notification `odd-framing` leaves unfinished after some answers: its
/// end (and newline) is written before the next answer.
const NEXT: &str = r#"{"jsonrpc":"2.0","method":"notifications/framing-test","params":{}}"#;

/// `odd-framing`: answers `server/discover` between blank and
/// whitespace-only lines with `\r\n` endings, and each `tools/call` framed
/// as its tool's name says (see [`CASES`]); the answer to the first of
/// `pair-a` and `pair-b` is held until the other comes, and both go out in
/// one write, then a blank line.
pub fn fake_odd_framing() -> ! {
    let mut unfinished = String::new();
    let mut held: Option<Vec<u8>> = None;
    each_request(|out, id, method, msg| {
        let line = |result: Value| serde_json::to_string(&reply(id, result)).expect("encodes");
        // The end of a message left unfinished by the last answer.
        let rest = std::mem::take(&mut unfinished);
        if method == "server/discover" {
            let discover = line(fake_discover("odd-framing", "fake"));
            return send_raw(out, format!("\n \r\n{discover}\r\n\t\r\n").as_bytes());
        }
        let tool = tool_name(msg).to_owned();
        let answer = line(text_result(&echo_text(msg)));
        let half = answer.len() / 2;
        let (next_head, next_tail) = NEXT.split_at(NEXT.len() / 2);
        match tool.as_str() {
            "blank-line-before" => send_raw(out, format!("{rest}\n\n{answer}\n").as_bytes()),
            "blank-line-after" => send_raw(out, format!("{rest}{answer}\n\n").as_bytes()),
            "crlf" => send_raw(out, format!("{rest}{answer}\r\n").as_bytes()),
            "crlf-then-blank-crlf" => send_raw(out, format!("{rest}{answer}\r\n\r\n").as_bytes()),
            "whitespace-line-after" => {
                send_raw(out, format!("{rest}{answer}\n \t \n").as_bytes());
            }
            "split-across-writes" => {
                send_raw(out, format!("{rest}{}", &answer[..half]).as_bytes());
                thread::sleep(Duration::from_millis(30));
                send_raw(out, format!("{}\n", &answer[half..]).as_bytes());
            }
            "byte-by-byte" => {
                for byte in format!("{rest}{answer}\n").bytes() {
                    send_raw(out, &[byte]);
                }
            }
            "start-of-the-next-message-after" => {
                send_raw(out, format!("{rest}{answer}\n{next_head}").as_bytes());
                unfinished = format!("{next_tail}\n");
            }
            "blank-line-then-start-of-the-next" => {
                send_raw(out, format!("{rest}{answer}\n\n{next_head}").as_bytes());
                unfinished = format!("{next_tail}\n");
            }
            // Whichever of the pair comes first waits for the other.
            "pair-a" | "pair-b" => match held.take() {
                None => held = Some(format!("{rest}{answer}\n").into_bytes()),
                Some(mut both) => {
                    both.extend_from_slice(format!("{rest}{answer}\n\n").as_bytes());
                    send_raw(out, &both);
                }
            },
            _ => send_raw(out, format!("{rest}{answer}\n").as_bytes()),
        }
    });
    std::process::exit(0);
}

/// Every case's answer reaches its caller while the fake writes nothing
/// more; two answers in one write followed by a blank line reach both.
pub fn odd_framing_around_replies_delays_and_loses_none() -> Result<String, String> {
    let client = builder()
        .request_timeout(Duration::from_secs(5))
        .spawn(server_command("odd-framing", None))
        .map_err(|e| format!("connecting failed (the discover answer was framed oddly): {e}"))?;
    for round in 0..2 {
        for case in CASES {
            let text = format!("{case} {round}");
            let result = client
                .call_tool(case, json!({ "text": text }))
                .and_then(Outcome::into_result)
                .map_err(|e| format!("{case}: {e}"))?;
            ensure!(
                result.text_content() == text,
                "{case}: the answer says {:?}",
                result.text_content()
            );
        }
    }
    let (a, b) = thread::scope(|scope| {
        let a = scope.spawn(|| client.call_tool("pair-a", json!({ "text": "a" })));
        // Either may reach the fake first: it holds the first one's answer.
        let b = client.call_tool("pair-b", json!({ "text": "b" }));
        (a.join().map_err(|_| "pair-a panicked".to_owned()), b)
    });
    let a = a?.and_then(Outcome::into_result);
    let a = a.map_err(|e| format!("pair-a: {e}"))?;
    let b = b.and_then(Outcome::into_result);
    let b = b.map_err(|e| format!("pair-b: {e}"))?;
    ensure!(
        a.text_content() == "a" && b.text_content() == "b",
        "two answers in one write: {:?} and {:?}",
        a.text_content(),
        b.text_content()
    );
    client.close().map_err(|e| format!("close: {e}"))?;
    Ok(format!("{} cases, twice", CASES.len()))
}

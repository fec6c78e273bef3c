//! The stdio transport's own rules: nothing but MCP on stdout, no requests
//! from the server, a reply whatever whitespace, line endings or writes
//! surround a request while stdin stays open, the end of input, SIGTERM,
//! stderr.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::driver::{Answer, Era, Msg, Session, unreadable_why};
use super::{Check, Ctx, Level, Verdict, short};

const PAGE: &str = "2026-07-28/basic/transports/stdio.md";
const READS: &str =
    "The server reads JSON-RPC messages from `stdin` and writes JSON-RPC messages to `stdout`.";

pub const CHECKS: &[Check] = &[
    Check {
        id: "stdio.stdout-only-mcp",
        level: Level::Must,
        page: PAGE,
        quote: "The server **MUST NOT** write anything to its `stdout` that is not a valid MCP message.",
        title: "every line on stdout, from the start, is a JSON-RPC message",
        run: stdout_only_mcp,
    },
    Check {
        id: "stdio.no-server-requests",
        level: Level::Must,
        page: PAGE,
        quote: "The server **MUST NOT** write JSON-RPC _requests_ to `stdout`.",
        title: "a modern server sends no requests",
        run: no_server_requests,
    },
    Check {
        id: "stdio.split-write",
        level: Level::Should,
        page: PAGE,
        quote: READS,
        title: "a request written in two parts, a pause between, is answered",
        run: split_write,
    },
    Check {
        id: "stdio.byte-by-byte",
        level: Level::Should,
        page: PAGE,
        quote: READS,
        title: "a request written one byte at a time is answered",
        run: byte_by_byte,
    },
    Check {
        id: "stdio.two-in-one-write",
        level: Level::Must,
        page: PAGE,
        quote: "Messages are delimited by newlines, and **MUST NOT** contain embedded newlines.",
        title: "two requests in one write are both answered",
        run: two_in_one_write,
    },
    Check {
        id: "stdio.crlf",
        level: Level::Should,
        page: PAGE,
        quote: READS,
        title: "a request ended by \\r\\n is answered while stdin stays open",
        run: crlf,
    },
    Check {
        id: "stdio.blank-line-after",
        level: Level::Should,
        page: PAGE,
        quote: READS,
        title: "a request followed by a blank line is answered while stdin stays open",
        run: blank_line_after,
    },
    Check {
        id: "stdio.blank-lines-before",
        level: Level::Should,
        page: PAGE,
        quote: READS,
        title: "blank lines before a request do not hold its reply",
        run: blank_lines_before,
    },
    Check {
        id: "stdio.whitespace-around",
        level: Level::Should,
        page: PAGE,
        quote: READS,
        title: "spaces and tabs around a request do not hold its reply",
        run: whitespace_around,
    },
    Check {
        id: "stdio.exit-on-eof",
        level: Level::Should,
        page: PAGE,
        quote: "Servers **SHOULD** exit promptly when their standard input is closed or reads return end-of-file.",
        title: "the server exits within 5 s of the end of its input",
        run: exit_on_eof,
    },
    Check {
        id: "stdio.sigterm",
        level: Level::May,
        page: PAGE,
        quote: "If the server does not exit within a reasonable time, forcibly terminating the process using the mechanism appropriate for the operating system.",
        title: "the server exits within 5 s of SIGTERM",
        run: sigterm,
    },
    Check {
        id: "stdio.stderr-utf8",
        level: Level::May,
        page: PAGE,
        quote: "The server **MAY** write UTF-8 strings to `stderr` for any logging purposes including informational, debug, and error messages.",
        title: "what the server writes on stderr is UTF-8 (and never taken for an error)",
        run: stderr_utf8,
    },
];

/// The request every framing check sends: `server/discover` (modern) or
/// `ping` (legacy), with this id.
pub fn probe(session: &Session, id: &Value) -> Value {
    match session.era {
        Era::Modern => session.envelope(id, "server/discover", json!({})),
        Era::Legacy => session.envelope(id, "ping", json!({})),
    }
}

/// The shared session, or a skip over HTTP (no byte stream).
fn stream(ctx: &mut Ctx) -> Result<&mut Session, Verdict> {
    if !ctx.target.is_stdio() {
        return Err(Verdict::Skip(
            "stdio only: over HTTP each message is a request body".into(),
        ));
    }
    ctx.session()
}

/// Writes `parts` (with a pause of `pause` between them) and waits for the
/// reply to the request among them with `id`.
fn framed(
    ctx: &mut Ctx,
    parts: &dyn Fn(&str) -> Vec<Vec<u8>>,
    pause: Duration,
    what: &str,
) -> Verdict {
    let wait = ctx.wait;
    let session = match stream(ctx) {
        Ok(s) => s,
        Err(v) => return v,
    };
    let id = session.fresh_id();
    let line = probe(session, &id).to_string();
    let parts = parts(&line);
    let n = parts.len();
    for (i, part) in parts.into_iter().enumerate() {
        session.send_raw(&part);
        if i + 1 < n && !pause.is_zero() {
            std::thread::sleep(pause);
        }
    }
    match session.answered(&id, wait) {
        Ok(()) => Verdict::Pass(format!("answered ({what})")),
        Err(e) => {
            // Whatever it held may come with the next line: a later check
            // must not inherit it.
            ctx.spoil();
            Verdict::Fail(format!("{what}: {e}, stdin still open"))
        }
    }
}

fn split_write(ctx: &mut Ctx) -> Verdict {
    framed(
        ctx,
        &|line| {
            let mid = line.len() / 2;
            vec![
                line.as_bytes()[..mid].to_vec(),
                format!("{}\n", &line[mid..]).into_bytes(),
            ]
        },
        Duration::from_millis(200),
        "written in two parts 200 ms apart",
    )
}

fn byte_by_byte(ctx: &mut Ctx) -> Verdict {
    framed(
        ctx,
        &|line| format!("{line}\n").bytes().map(|b| vec![b]).collect(),
        Duration::from_millis(1),
        "written one byte at a time",
    )
}

fn crlf(ctx: &mut Ctx) -> Verdict {
    framed(
        ctx,
        &|line| vec![format!("{line}\r\n").into_bytes()],
        Duration::ZERO,
        "ended by \\r\\n",
    )
}

fn blank_line_after(ctx: &mut Ctx) -> Verdict {
    framed(
        ctx,
        &|line| vec![format!("{line}\n\n").into_bytes()],
        Duration::ZERO,
        "followed by a blank line",
    )
}

fn blank_lines_before(ctx: &mut Ctx) -> Verdict {
    framed(
        ctx,
        &|line| vec![format!("\n\n{line}\n").into_bytes()],
        Duration::ZERO,
        "after two blank lines",
    )
}

fn whitespace_around(ctx: &mut Ctx) -> Verdict {
    framed(
        ctx,
        &|line| vec![format!("  {line} \t\n").into_bytes()],
        Duration::ZERO,
        "with spaces and a tab around it",
    )
}

fn two_in_one_write(ctx: &mut Ctx) -> Verdict {
    let wait = ctx.wait;
    let session = match stream(ctx) {
        Ok(s) => s,
        Err(v) => return v,
    };
    let (a, b) = (session.fresh_id(), session.fresh_id());
    let both = format!("{}\n{}\n", probe(session, &a), probe(session, &b));
    session.send_raw(both.as_bytes());
    for id in [&a, &b] {
        if let Err(e) = session.answered(id, wait) {
            ctx.spoil();
            return Verdict::Fail(format!("two requests in one write: request {id}: {e}"));
        }
    }
    Verdict::Pass("both answered".into())
}

/// What a typical client sends: the probe (or `initialize`, by the
/// session), then each list the server offers; every message it got.
fn typical_traffic(ctx: &Ctx, session: &mut Session) -> Result<Vec<Msg>, Verdict> {
    let mut got = Vec::new();
    let mut requests = vec![];
    if session.era == Era::Modern {
        requests.push("server/discover");
    } else {
        requests.push("ping");
    }
    for (capability, method) in [
        ("tools", "tools/list"),
        ("resources", "resources/list"),
        ("prompts", "prompts/list"),
    ] {
        if ctx.facts.offers(capability) {
            requests.push(method);
        }
    }
    for method in requests {
        let id = session.request(method, json!({}));
        match session.answer_with(&id, ctx.wait) {
            Ok((answer, before)) => {
                got.extend(before);
                got.push(match answer {
                    Answer::Json(reply) => Msg::Json(reply.clone(), reply.to_string()),
                    Answer::Unreadable { why, line, .. } => Msg::Unreadable(line, why),
                    Answer::Malformed { msg, .. } => msg,
                });
            }
            Err(e) => return Err(Verdict::Fail(format!("{method}: {e}"))),
        }
    }
    // What it writes just after, unasked.
    got.extend(session.drain(Duration::from_millis(200)));
    Ok(got)
}

/// A fresh stdio server in the primary era, or why not.
fn fresh_stdio(ctx: &Ctx) -> Result<Session, Verdict> {
    if !ctx.target.is_stdio() {
        return Err(Verdict::Skip("stdio only".into()));
    }
    ctx.fresh(ctx.facts.primary.unwrap_or(Era::Modern))
}

/// Why a JSON value is not a JSON-RPC 2.0 message, if it is not.
fn not_a_message(v: &Value) -> Option<String> {
    let Some(obj) = v.as_object() else {
        return Some("not a JSON object".into());
    };
    if obj.get("jsonrpc") != Some(&json!("2.0")) {
        return Some("no \"jsonrpc\": \"2.0\"".into());
    }
    if !(obj.contains_key("method") || obj.contains_key("result") || obj.contains_key("error")) {
        return Some("neither a request, a notification nor a response".into());
    }
    None
}

fn stdout_only_mcp(ctx: &mut Ctx) -> Verdict {
    let mut session = match fresh_stdio(ctx) {
        Ok(s) => s,
        Err(v) => return v,
    };
    // What it wrote during the handshake (a legacy session's
    // `initialize`) and before it was asked anything else, then the
    // traffic.
    let mut got = std::mem::take(&mut session.handshake);
    got.extend(session.drain(Duration::from_millis(200)));
    match typical_traffic(ctx, &mut session) {
        Ok(more) => got.extend(more),
        Err(v) => return v,
    }
    // A line the checker cannot read is a skip only when no other line
    // is a violation: it must not hide one that comes after it.
    let mut unread = None;
    for msg in &got {
        let why = match msg {
            Msg::NotJson(_) => Some("not JSON".to_owned()),
            Msg::Json(v, _) => not_a_message(v),
            // Whatever its values, a line that is not an object is no
            // message: a violation, not the checker's limit.
            Msg::Unreadable(text, _) if !text.trim_start().starts_with('{') => {
                Some("not a JSON object".to_owned())
            }
            Msg::Unreadable(_, why) => {
                unread.get_or_insert_with(|| {
                    format!(
                        "a line of JSON the checker cannot read ({}): {}",
                        unreadable_why(why),
                        short(msg.text(), 120)
                    )
                });
                None
            }
            Msg::Cut(_) => {
                unread.get_or_insert_with(|| {
                    format!(
                        "a line longer than the checker's limit of {} MiB, not read whole",
                        super::driver::MAX_LINE >> 20
                    )
                });
                None
            }
        };
        if let Some(why) = why {
            return Verdict::Fail(format!("{why}: {}", short(msg.text(), 120)));
        }
    }
    if let Some(reason) = unread {
        return Verdict::Skip(reason);
    }
    Verdict::Pass(format!("{} lines, each a JSON-RPC message", got.len()))
}

fn no_server_requests(ctx: &mut Ctx) -> Verdict {
    if let Err(v) = ctx.facts.need_modern_primary() {
        return v;
    }
    let mut session = match fresh_stdio(ctx) {
        Ok(s) => s,
        Err(v) => return v,
    };
    let got = match typical_traffic(ctx, &mut session) {
        Ok(got) => got,
        Err(v) => return v,
    };
    match got
        .iter()
        .find(|m| m.method().is_some() && m.json().is_some_and(|v| v.get("id").is_some()))
    {
        Some(request) => Verdict::Fail(format!(
            "a request from the server: {}",
            short(request.text(), 160)
        )),
        None => Verdict::Pass(format!("{} messages, no request among them", got.len())),
    }
}

fn exit_on_eof(ctx: &mut Ctx) -> Verdict {
    let mut session = match fresh_stdio(ctx) {
        Ok(s) => s,
        Err(v) => return v,
    };
    // One exchange first: the server is up and reading.
    let id = session.fresh_id();
    let line = probe(&session, &id);
    session.send_json(&line);
    if let Err(e) = session.answered(&id, ctx.wait) {
        return Verdict::Fail(format!("no answer before the end of input: {e}"));
    }
    session.close_input();
    let began = Instant::now();
    match session.wait_exit(Duration::from_secs(5)) {
        Some(status) => Verdict::Pass(format!(
            "exited {:.0} ms after its input closed ({status})",
            began.elapsed().as_secs_f64() * 1000.0
        )),
        None if session.ended => Verdict::Fail(
            "closed its output but was still running 5 s after its input closed".into(),
        ),
        None => Verdict::Fail("still running 5 s after its input closed".into()),
    }
}

#[cfg(unix)]
fn sigterm(ctx: &mut Ctx) -> Verdict {
    let mut session = match fresh_stdio(ctx) {
        Ok(s) => s,
        Err(v) => return v,
    };
    let id = session.fresh_id();
    let line = probe(&session, &id);
    session.send_json(&line);
    if let Err(e) = session.answered(&id, ctx.wait) {
        return Verdict::Fail(format!("no answer before SIGTERM: {e}"));
    }
    if !session.terminate() {
        return Verdict::Skip("could not send SIGTERM".into());
    }
    let began = Instant::now();
    match session.wait_exit(Duration::from_secs(5)) {
        Some(status) => Verdict::Pass(format!(
            "exited {:.0} ms after SIGTERM ({status}), its input still open",
            began.elapsed().as_secs_f64() * 1000.0
        )),
        None => Verdict::Fail("still running 5 s after SIGTERM".into()),
    }
}

#[cfg(not(unix))]
fn sigterm(_ctx: &mut Ctx) -> Verdict {
    Verdict::Skip("SIGTERM is POSIX".into())
}

fn stderr_utf8(ctx: &mut Ctx) -> Verdict {
    let wait = ctx.wait;
    let session = match stream(ctx) {
        Ok(s) => s,
        Err(v) => return v,
    };
    // One more exchange, so that what it writes on stderr is in by now.
    let id = session.fresh_id();
    let line = probe(session, &id);
    session.send_json(&line);
    if let Err(e) = session.answered(&id, wait) {
        return Verdict::Fail(format!("no answer: {e}"));
    }
    let log = session.stderr.lock().unwrap_or_else(|e| e.into_inner());
    if log.not_utf8 > 0 {
        return Verdict::Fail(format!(
            "{} of {} stderr lines are not UTF-8",
            log.not_utf8, log.total
        ));
    }
    Verdict::Pass(format!(
        "{} stderr lines so far, UTF-8, none taken for an error",
        log.total
    ))
}

//! A hostile review of issue 49's work (branch `review-49`): each check
//! states a claim against the command line as merged, and fails while the
//! claim holds. They are checks to be made to pass by a fix, not fixes.
//!
//! The scripted servers here are `review:NAME` (`serve`): `c1` (a modern
//! server whose tool fails with C1 controls in its message), `anyof` (a
//! modern server whose tool's `name` property is `anyOf [string, null]`,
//! Pydantic's `Optional[str]`, answering with its arguments as read),
//! `form` (a legacy server asking the form in `REVIEW_SCHEMA` and answering
//! with the client's answer line as it came), `bigform` (a legacy server
//! asking a form of `REVIEW_FIELDS` fields), `slow-reader` (a modern server
//! that reads nothing for 3.5 s, then answers `server/discover` 2 s after
//! reading it), `linger` (a modern server that stays 15 s after its input
//! ends) and `names` (a modern server whose tool names and descriptions
//! hold line separators other than `\n`).

use std::io::{BufRead, Write};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::terminal::on_terminal;
use crate::{BIN, Once, Run, SERVER_ENV, Setup, cli, me, run, run_command};

pub const CHECKS: &[(&str, Once)] = &[
    (
        "review49_raw_keeps_stderr_escaped_on_a_terminal",
        raw_stderr,
    ),
    ("review49_json_on_a_terminal_escapes_c1_controls", json_c1),
    (
        "review49_any_of_string_or_null_keeps_a_string",
        any_of_string,
    ),
    (
        "review49_numbers_in_a_json_array_go_as_written",
        json_array_numbers,
    ),
    (
        "review49_a_huge_exponent_is_refused_not_a_panic",
        huge_exponent,
    ),
    (
        "review49_form_integer_answer_goes_exactly",
        form_integer_exact,
    ),
    (
        "review49_a_form_field_it_cannot_type_fails_the_command",
        untypable_form,
    ),
    (
        "review49_a_form_of_many_fields_is_read_in_linear_time",
        big_form,
    ),
    (
        "review49_probe_grace_runs_from_the_read",
        grace_from_the_read,
    ),
    (
        "review49_the_legacy_reason_says_the_wait_it_made",
        legacy_reason_wait,
    ),
    (
        "review49_a_server_that_exited_is_not_still_starting",
        exited_not_starting,
    ),
    (
        "review49_timeout_bounds_the_close_too",
        timeout_bounds_close,
    ),
    ("review49_json_save_writes_the_files", json_save),
    (
        "review49_json_progress_is_as_the_server_sent_it",
        json_progress,
    ),
    (
        "review49_line_separators_in_names_stay_on_their_line",
        line_separators,
    ),
    #[cfg(feature = "http")]
    (
        "review49_a_token_file_others_can_read_is_refused",
        token_file_mode,
    ),
];

/// The form `review:form` asks (JSON text), in its environment.
const SCHEMA_ENV: &str = "REVIEW_SCHEMA";
/// How many fields `review:bigform`'s form has.
const FIELDS_ENV: &str = "REVIEW_FIELDS";

/// OSC 0 (set the title) written with C1 controls: U+009D (OSC) and U+009C
/// (ST). JSON's string escaping leaves both as they are.
const C1_TITLE: &str = "\u{9d}0;owned\u{9c}";

fn setup(mode: &'static str, era: &'static str) -> Setup {
    Setup { mode, era }
}

/// `failures` all at once, as one error.
fn report(failures: Vec<String>) -> Result<(), String> {
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n  AND "))
    }
}

// ---------------------------------------------------------------------------
// Claims
// ---------------------------------------------------------------------------

/// Claim: `--raw` asks for the bytes of stdout, but it also turns off the
/// escaping of stderr on a terminal: the server's stderr (`--show-stderr`),
/// its log messages, the wire and a form's questions reach the terminal
/// raw, though the user redirected stdout to a file.
fn raw_stderr() -> Result<(), String> {
    let run = on_terminal("fake:evil", &["--raw", "--show-stderr", "info"])?;
    run.expect_code(0)?;
    let server = run
        .stdout
        .lines()
        .find(|l| l.starts_with("[server]"))
        .ok_or_else(|| format!("no [server] line: {:?}", run.stdout))?;
    if server.contains(['\x1b', '\x07']) {
        return Err(format!(
            "--raw let the server's stderr drive the terminal: {server:?}"
        ));
    }
    Ok(())
}

/// Claim: with `--json` on a terminal the C1 controls (U+0080..U+009F,
/// which `escape.rs` itself names as terminal commands) and the bidi
/// overrides go through raw, on stdout and on stderr (`rpcError`): JSON's
/// own escaping covers U+0000..U+001F only.
fn json_c1() -> Result<(), String> {
    let mut failures = Vec::new();
    let text = format!("text={C1_TITLE}");
    let out = on_terminal("everything", &["--json", "call", "echo", &text])?;
    if out.stdout.contains('\u{9d}') {
        failures.push(format!(
            "stdout: raw U+009D on the terminal: {:?}",
            out.stdout
        ));
    }
    let err = on_terminal("review:c1", &["--json", "call", "c1"])?;
    if err.stdout.contains('\u{9d}') {
        failures.push(format!(
            "stderr: raw U+009D on the terminal: {:?}",
            err.stdout
        ));
    }
    report(failures)
}

/// Claim: `key=value` is typed by the schema only where `type` is given:
/// the shape Pydantic writes for `Optional[str]` (`anyOf` of `string` and
/// `null`, in most Python servers) falls to the untyped rule, and
/// `name=42` is sent as the integer 42, which the server refuses.
fn any_of_string() -> Result<(), String> {
    cli(
        setup("review:anyof", "auto"),
        &["call", "echo", "name=42"],
        "",
    )?
    .expect_code(0)?
    .stdout_is("{\"name\":\"42\"}\n")?;
    Ok(())
}

/// Claim: "numbers go as written" holds for a value typed `integer`, not
/// for one inside a JSON array or object: `sizes=[1e2]` (items `integer`)
/// sends `100.0`, and `loose=-0` sends `-0.0`.
///
/// (Fix: `-0` is sent as `0`, not as written: the client's params are a
/// `serde_json::Value`, which holds `-0` only as the double `-0.0`; `0` is
/// the same JSON number, and an integer as `-0` is to Python's `json`.)
fn json_array_numbers() -> Result<(), String> {
    let typed = setup("fake:typed", "auto");
    let mut failures = Vec::new();
    for (arg, sent) in [
        ("sizes=[1e2]", "{\"sizes\":[100]}\n"),
        ("loose=-0", "{\"loose\":0}\n"),
        ("loose=[-0,-0.0]", "{\"loose\":[0,-0.0]}\n"),
    ] {
        let run = cli(typed, &["call", "typed", arg], "")?;
        if let Err(e) = run.expect_code(0).and_then(|r| r.stdout_is(sent)) {
            failures.push(format!("{arg}: {e}"));
        }
    }
    report(failures)
}

/// Claim: `values::decimal` overflows on an exponent near `i64::MIN`
/// (`exponent -= leading`): the debug build panics (exit 101) where the
/// number should be refused as inexact (exit 2).
fn huge_exponent() -> Result<(), String> {
    let run = cli(
        setup("fake:typed", "auto"),
        &["call", "typed", "loose=0.1e-9223372036854775808"],
        "",
    )?;
    run.expect_code(2)?;
    Ok(())
}

/// Claim: an elicitation answer for an `integer` field goes through an
/// `f64`: `--answer n=9007199254740993` is sent as `9007199254740992.0`,
/// and anything from 9e15 up as a float, though the field is an integer
/// and item 2 says numbers from the user go as written.
fn form_integer_exact() -> Result<(), String> {
    let schema = r#"{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}"#;
    let args = ["call", "form", "--answer", "n=9007199254740993"];
    let run = form_run(schema, &args)?;
    run.expect_code(0)?
        .stdout_has(r#""content":{"n":9007199254740993}"#)?;
    Ok(())
}

/// Claim: a form with a field the command line cannot type (an `object`,
/// which the spec's `PrimitiveSchemaDefinition` leaves out) is answered
/// with -32602 by the client library, and the command exits 0 without a
/// word (item 4: an elicitation the command line cannot fill is said on
/// stderr, with a non-zero exit). With `--answer addr.street=x` it says
/// "the server asked for no input", which is false.
fn untypable_form() -> Result<(), String> {
    let schema = r#"{"type":"object","properties":{"addr":{"type":"object","properties":{"street":{"type":"string"}}}},"required":["addr"]}"#;
    let mut failures = Vec::new();
    let plain = form_run(schema, &["call", "form"])?;
    if plain.code == Some(0) || !plain.stderr.contains("addr") {
        failures.push(format!(
            "without answers: exit {:?}, stderr {:?}",
            plain.code, plain.stderr
        ));
    }
    let answered = form_run(schema, &["call", "form", "--answer", "addr.street=x"])?;
    if answered.stderr.contains("asked for no input") {
        failures.push(format!("with an answer: {:?}", answered.stderr));
    }
    report(failures)
}

/// Claim: `Properties` is read with an `insert` that looks through every
/// field before it (O(n²)): a form of 35 000 fields (about 1 MB, well
/// under the 16 MiB line limit) takes the client 17 s of CPU in a debug
/// build (25 000: 5 s; 40 000: 27 s), where the `BTreeMap` it replaced took
/// milliseconds. A hostile server stalls the client; `required` is a `Vec`
/// searched once per field too (`form::fill`).
fn big_form() -> Result<(), String> {
    let started = Instant::now();
    let args = ["--decline", "call", "form", "--era", "auto", "--", &me()].map(String::from);
    let run = run(
        &args,
        &[(SERVER_ENV, "review:bigform"), (FIELDS_ENV, "35000")],
        "",
    )?;
    let took = started.elapsed();
    run.expect_code(0)?;
    // The quadratic read takes 17 s of the client's CPU, so at least as
    // long on the clock, however quiet the machine: a bound of 12 s fails
    // it always, and leaves the linear read room on a loaded one (4.4 s
    // once beside a CI run and two other builds, load average 16).
    if took > Duration::from_secs(12) {
        return Err(format!("a form of 35 000 fields took {took:?}"));
    }
    Ok(())
}

/// Claim: the probe's grace runs from when it was sent, not (as
/// `ClientBuilder::probe_timeout` and `era.rs` say) from when the server
/// read it: whether it read is first looked at when the grace is over. A
/// modern server that reads the probe at 3.5 s and answers at 5.5 s is
/// taken for legacy, sent `initialize`, and the command fails.
fn grace_from_the_read() -> Result<(), String> {
    cli(setup("review:slow-reader", "auto"), &["info"], "")?
        .expect_code(0)?
        .stdout_has("era:          modern")?;
    Ok(())
}

/// Claim: when `--timeout` cuts the probe short, the legacy reason still
/// says "no answer to server/discover within 5 s" (the probe timeout, not
/// the wait made), in the note on stderr and in `info`'s era line; and
/// `initialize` is then left with no time at all (it succeeds only by a
/// race).
fn legacy_reason_wait() -> Result<(), String> {
    let run = cli(
        setup("fake:silent-legacy", "auto"),
        &["--timeout", "2", "info"],
        "",
    )?;
    let all = format!("{}{}", run.stdout, run.stderr);
    if all.contains("within 5 s") {
        return Err(format!("waited 2 s, says 5 s: {all:?}"));
    }
    Ok(())
}

/// Claim: a server that exited at once while a child of its holds its
/// pipes (a wrapper that died: its stdin has no reader, FIONREAD still
/// counts the probe in it) is taken for a server "still starting", and
/// waited on for the whole start bound (60 s by default), before the
/// command says it exited.
fn exited_not_starting() -> Result<(), String> {
    let started = Instant::now();
    let args = [
        "--timeout",
        "8",
        "info",
        "--",
        "sh",
        "-c",
        "sleep 10 & exit 3",
    ]
    .map(String::from);
    let run = run(&args, &[], "")?;
    let took = started.elapsed();
    run.expect_code(3)?;
    if took > Duration::from_secs(4) {
        return Err(format!(
            "a server that exited at once was waited on for {took:?}: {:?}",
            run.stderr
        ));
    }
    Ok(())
}

/// Claim: `--timeout SECS` is "the whole command within SECS", but the
/// close after it is not bounded by it: a server that stays after its
/// input ends costs the close grace (2 s), and one that ignores SIGTERM
/// 2 s more, past the timeout.
fn timeout_bounds_close() -> Result<(), String> {
    let started = Instant::now();
    let script = "trap '' TERM; exec \"$0\"";
    let args = [
        "--timeout",
        "2",
        "call",
        "t",
        "--",
        "sh",
        "-c",
        script,
        &me(),
    ]
    .map(String::from);
    let run = run(&args, &[(SERVER_ENV, "review:linger")], "")?;
    let took = started.elapsed();
    run.expect_code(0)?;
    if took > Duration::from_secs(3) {
        return Err(format!("--timeout 2 took {took:?}"));
    }
    Ok(())
}

/// Claim: `--save DIR` with `--json` makes DIR and saves nothing (the
/// saver runs in the human output only), exit status 0.
fn json_save() -> Result<(), String> {
    let dir = crate::scratch("review-json-save");
    let dir_text = dir.to_string_lossy().into_owned();
    let run = cli(
        crate::MODERN,
        &["--json", "call", "test_image_content", "--save", &dir_text],
        "",
    )?;
    run.expect_code(0)?;
    let saved = dir.join("test_image_content-1.png").exists();
    let _ = std::fs::remove_dir_all(&dir);
    if !saved {
        return Err("--json --save DIR saved nothing, and said nothing".into());
    }
    Ok(())
}

/// Claim: with `--json`, progress is said to be "the notifications as the
/// server sent them" (`stderr.rs`, `--help`), but it is the typed params
/// written again: `"progress":1` becomes `1.0`, `"total":2` `2.0`, and
/// the keys are sorted.
fn json_progress() -> Result<(), String> {
    let run = cli(
        setup("review:progress", "auto"),
        &["--json", "call", "t"],
        "",
    )?;
    run.expect_code(0)?;
    let line = run
        .stderr
        .lines()
        .find(|l| l.contains("notifications/progress"))
        .ok_or_else(|| format!("no progress line: {:?}", run.stderr))?;
    if !line.contains(PROGRESS) {
        return Err(format!("sent {PROGRESS}, shown {line}"));
    }
    Ok(())
}

/// Claim: "a name containing a newline cannot break one item a line" holds
/// for `\n` only: U+2028 (LINE SEPARATOR) in a name and a lone `\r` in a
/// description pass through to piped output, and a script that splits
/// lines as Python's `str.splitlines` does reads three items for two.
fn line_separators() -> Result<(), String> {
    let run = cli(setup("review:names", "auto"), &["tools"], "")?;
    run.expect_code(0)?;
    let separators = [
        '\n', '\r', '\u{b}', '\u{c}', '\u{1c}', '\u{1d}', '\u{1e}', '\u{85}', '\u{2028}',
        '\u{2029}',
    ];
    let items = run
        .stdout
        .split(separators)
        .filter(|l| !l.is_empty())
        .count();
    if items != 2 {
        return Err(format!("{items} lines for 2 tools: {:?}", run.stdout));
    }
    Ok(())
}

/// Claim: `--bearer-token-file` takes a file every user can read (mode
/// 0644) without a word, though the option exists to keep the token from
/// other users (as `ps` shows argv); ssh refuses such key files.
#[cfg(feature = "http")]
fn token_file_mode() -> Result<(), String> {
    use std::io::BufReader;
    use std::os::unix::fs::PermissionsExt;
    use std::process::Stdio;

    use crate::LIMIT;
    let dir = crate::scratch("review-token-mode");
    let file = dir.join("token");
    std::fs::write(&file, "secret\n").map_err(|e| e.to_string())?;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644))
        .map_err(|e| e.to_string())?;
    let file = file.to_string_lossy().into_owned();
    let exe = me();
    let mut child = Command::new(BIN)
        .args([
            "serve-http",
            "--listen",
            "127.0.0.1:0",
            "--bearer-token-file",
            &file,
        ])
        .args(["--", &exe])
        .env(SERVER_ENV, "everything")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let (tx, rx) = crossbeam_channel::unbounded();
    let stderr = child.stderr.take().expect("piped stderr");
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut said = Vec::new();
    while let Ok(line) = rx.recv_timeout(LIMIT) {
        let serving = line.contains(" at http://");
        said.push(line);
        if serving {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    let said = said.join("\n");
    let lower = said.to_lowercase();
    if lower.contains("readable") || lower.contains("permission") || lower.contains("mode") {
        return Ok(());
    }
    Err(format!("a 0644 token file, nothing said: {said:?}"))
}

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/// `mcp-stdio ARGS --era auto -- <review:form asking schema>`.
fn form_run(schema: &str, args: &[&str]) -> Result<Run, String> {
    let mut full: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    full.extend(["--era".into(), "auto".into(), "--".into(), me()]);
    let mut command = Command::new(BIN);
    command
        .args(&full)
        .env(SERVER_ENV, "review:form")
        .env(SCHEMA_ENV, schema);
    run_command(command, &format!("mcp-stdio {}", full.join(" ")), "")
}

// ---------------------------------------------------------------------------
// The scripted servers
// ---------------------------------------------------------------------------

type Reply = Result<Value, Value>;

/// Serves as `mode` (without its `review:` prefix) and exits.
pub fn serve(mode: &str) -> ! {
    if mode == "slow-reader" {
        // Still "installing": nothing is read yet.
        std::thread::sleep(Duration::from_millis(3500));
    }
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut out = std::io::stdout().lock();
    while let Some(Ok(line)) = lines.next() {
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let (Some(id), Some(method)) = (msg.get("id").cloned(), msg["method"].as_str()) else {
            continue;
        };
        let reply = match mode {
            "c1" => c1(method),
            "anyof" => anyof(method, &line),
            "form" | "bigform" => form(method, mode, &mut out, &mut lines),
            "slow-reader" => slow_reader(method),
            "linger" => modern_tool(method, "t"),
            "progress" => progress(method, &msg, &mut out),
            "names" => names(method),
            other => panic!("no review server {other:?}"),
        };
        let line = match reply {
            Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
            Err(error) => json!({ "jsonrpc": "2.0", "id": id, "error": error }),
        };
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
    if mode == "linger" {
        // Stays after its input ended, as a server with a thread of its
        // own (or a wrapper) does.
        std::thread::sleep(Duration::from_secs(15));
    }
    std::process::exit(0)
}

fn not_found(method: &str) -> Reply {
    Err(json!({ "code": -32601, "message": format!("Method not found: {method}") }))
}

fn discover(name: &str) -> Value {
    json!({
        "resultType": "complete",
        "supportedVersions": ["2026-07-28"],
        "capabilities": { "tools": {} },
        "_meta": { "io.modelcontextprotocol/serverInfo": { "name": name, "version": "1" } }
    })
}

fn tools(tools: Value) -> Reply {
    Ok(json!({ "resultType": "complete", "tools": tools }))
}

fn text(text: &str) -> Reply {
    Ok(json!({ "resultType": "complete", "content": [{ "type": "text", "text": text }] }))
}

fn c1(method: &str) -> Reply {
    match method {
        "server/discover" => Ok(discover("c1")),
        "tools/list" => tools(json!([{ "name": "c1", "inputSchema": { "type": "object" } }])),
        "tools/call" => Err(json!({ "code": -32603, "message": format!("failed {C1_TITLE}") })),
        method => not_found(method),
    }
}

fn anyof(method: &str, line: &str) -> Reply {
    match method {
        "server/discover" => Ok(discover("anyof")),
        "tools/list" => tools(json!([{
            "name": "echo",
            "inputSchema": { "type": "object", "properties": {
                "name": { "anyOf": [{ "type": "string" }, { "type": "null" }], "default": null }
            }}
        }])),
        "tools/call" => {
            let msg: Value = serde_json::from_str(line).unwrap_or_default();
            text(&msg["params"]["arguments"].to_string())
        }
        method => not_found(method),
    }
}

fn modern_tool(method: &str, name: &str) -> Reply {
    match method {
        "server/discover" => Ok(discover(name)),
        "tools/list" => tools(json!([{ "name": name, "inputSchema": { "type": "object" } }])),
        "tools/call" => text("done"),
        method => not_found(method),
    }
}

/// The params of `review:progress`'s notification, as it writes them.
const PROGRESS: &str = r#""progress":1,"total":2,"message":"half""#;

/// `review:progress`: its tool sends one progress notification, with
/// whole numbers, then answers.
fn progress(method: &str, msg: &Value, out: &mut impl Write) -> Reply {
    if method == "tools/call" {
        let token = msg["params"]["_meta"]["progressToken"].clone();
        let _ = writeln!(
            out,
            r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":{token},{PROGRESS}}}}}"#
        );
        let _ = out.flush();
    }
    modern_tool(method, "t")
}

fn slow_reader(method: &str) -> Reply {
    if method == "server/discover" {
        // Read at 3.5 s, answered at 5.5 s: within the probe's 5 s of
        // the moment it was read.
        std::thread::sleep(Duration::from_secs(2));
    }
    modern_tool(method, "slow-reader")
}

fn names(method: &str) -> Reply {
    match method {
        "server/discover" => Ok(discover("names")),
        "tools/list" => tools(json!([
            { "name": "one\u{2028}two", "description": "A line separator.", "inputSchema": { "type": "object" } },
            { "name": "three", "description": "first\rsecond", "inputSchema": { "type": "object" } }
        ])),
        method => not_found(method),
    }
}

/// A legacy server whose `form` tool asks a form and answers with the
/// client's answer line as it came.
fn form(
    method: &str,
    mode: &str,
    out: &mut impl Write,
    lines: &mut impl Iterator<Item = std::io::Result<String>>,
) -> Reply {
    match method {
        "server/discover" => not_found(method),
        "initialize" => Ok(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": { "tools": {} },
            "serverInfo": { "name": "review-form", "version": "1" }
        })),
        "tools/list" => Ok(json!({ "tools": [
            { "name": "form", "description": "Asks a form.", "inputSchema": { "type": "object" } }
        ]})),
        "tools/call" => {
            let schema = if mode == "bigform" {
                let n: usize = std::env::var(FIELDS_ENV)
                    .ok()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(1);
                let fields: Vec<String> = (0..n)
                    .map(|i| format!(r#""f{i}":{{"type":"boolean"}}"#))
                    .collect();
                format!(
                    r#"{{"type":"object","properties":{{{}}}}}"#,
                    fields.join(",")
                )
            } else {
                std::env::var(SCHEMA_ENV).unwrap_or_default()
            };
            let request = format!(
                r#"{{"jsonrpc":"2.0","id":"form-1","method":"elicitation/create","params":{{"message":"Your details","requestedSchema":{schema}}}}}"#
            );
            let _ = writeln!(out, "{request}");
            let _ = out.flush();
            let answer = lines
                .map_while(Result::ok)
                .find(|l| l.contains(r#""id":"form-1""#))
                .unwrap_or_default();
            Ok(json!({ "content": [{ "type": "text", "text": answer }] }))
        }
        method => not_found(method),
    }
}

//! Issue 49, item 1: nothing a server sends reaches a terminal raw. On a
//! terminal (a pseudo-terminal of `script`, from util-linux) control
//! characters from the server are shown escaped; `--raw` keeps the bytes;
//! piped output keeps them too (scripts read it); an error line is one line
//! of text wherever it goes; a name holding a newline stays on its line.

use std::process::Command;

use crate::fakes::{CLEAR, CLIPBOARD, RED, TITLE};
use crate::{BIN, Once, Run, SERVER_ENV, Setup, cli, me, run, run_command};

pub const CHECKS: &[(&str, Once)] = &[
    ("terminal_result_is_escaped", result_escaped),
    ("terminal_raw_keeps_the_bytes", raw_keeps_bytes),
    ("terminal_lists_info_and_stderr_are_escaped", lists_escaped),
    ("piped_result_keeps_the_bytes", piped_keeps_bytes),
    (
        "failure_line_escapes_the_servers_stderr",
        failure_line_escaped,
    ),
    ("failure_line_escapes_the_servers_error", error_escaped),
    ("a_name_with_a_newline_stays_on_its_line", newline_name),
    (
        "every_line_quoting_a_servers_error_escapes_it_wherever_it_goes",
        error_escaped_in_every_line,
    ),
    (
        "the_line_declining_a_form_escapes_its_message_wherever_it_goes",
        declined_form_escaped_in_a_pipe,
    ),
];

const EVIL: Setup = Setup {
    mode: "fake:evil",
    era: "auto",
};

const EVIL_LEGACY: Setup = Setup {
    mode: "fake:evil-legacy",
    era: "legacy",
};

/// What the issue's first command sends: a title change, then red.
const ECHOED: &str = "\x1b]0;pwned\x07\x1b[31mRED";

/// Runs `mcp-stdio ARGS --era auto -- <this binary>` as server `mode`, on a
/// terminal of its own: `stdout` is what the terminal showed (stdout and
/// stderr together, lines ended with `\r\n`).
pub(crate) fn on_terminal(mode: &str, args: &[&str]) -> Result<Run, String> {
    let mut full: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    full.extend(["--era".into(), "auto".into(), "--".into(), me()]);
    // The arguments reach the shell through the environment, so that no
    // byte of them is quoted or lost.
    let mut shell = String::from("exec \"$MCP_STDIO_CLI_BIN\"");
    let mut command = Command::new("script");
    for (i, arg) in full.iter().enumerate() {
        shell.push_str(&format!(" \"$MCP_STDIO_CLI_ARG{i}\""));
        command.env(format!("MCP_STDIO_CLI_ARG{i}"), arg);
    }
    command
        .args(["-qec", &shell, "/dev/null"])
        .env("MCP_STDIO_CLI_BIN", BIN)
        .env(SERVER_ENV, mode);
    run_command(
        command,
        &format!("script -qec 'mcp-stdio {}'", args.join(" ")),
        "",
    )
    .map_err(|e| format!("{e} (this check needs script(1), from util-linux)"))
}

/// No escape (ESC) or bell (BEL) byte reached the terminal.
fn no_controls(run: &Run) -> Result<(), String> {
    if run.stdout.contains(['\x1b', '\x07']) {
        return Err(format!(
            "raw control bytes on the terminal: {:?}",
            run.stdout
        ));
    }
    Ok(())
}

fn result_escaped() -> Result<(), String> {
    let text = format!("text={ECHOED}");
    let run = on_terminal("everything", &["call", "echo", &text])?;
    run.expect_code(0)?;
    no_controls(&run)?;
    run.stdout_has("\\u{1b}]0;pwned\\u{7}\\u{1b}[31mRED\r\n")?;
    Ok(())
}

fn raw_keeps_bytes() -> Result<(), String> {
    let text = format!("text={ECHOED}");
    on_terminal("everything", &["call", "echo", &text, "--raw"])?
        .expect_code(0)?
        .stdout_has(&format!("{ECHOED}\r\n"))?;
    Ok(())
}

fn lists_escaped() -> Result<(), String> {
    let tools = on_terminal("fake:evil", &["tools"])?;
    tools.expect_code(0)?;
    no_controls(&tools)?;
    tools
        .stdout_has("paint\\u{1b}[31m  Paints \\u{1b}]0;owned\\u{7}the title.")?
        .stdout_has("two\\nlines")?;
    let info = on_terminal("fake:evil", &["info", "--show-stderr"])?;
    info.expect_code(0)?;
    no_controls(&info)?;
    info.stdout_has("[server] starting \\u{1b}]0;owned\\u{7}evil")?
        .stdout_has("server:       evil\\u{1b}]0;owned\\u{7} 1")?
        .stdout_has("instructions: Be careful.\\u{1b}]52;c;cHduZWQ=\\u{7}\r\n")?
        .stdout_has("Second line\\u{1b}[31m.")?;
    Ok(())
}

fn piped_keeps_bytes() -> Result<(), String> {
    let text = format!("text={ECHOED}");
    cli(crate::MODERN, &["call", "echo", &text], "")?
        .expect_code(0)?
        .stdout_is(&format!("{ECHOED}\n"))?;
    cli(EVIL, &["call", &format!("paint{RED}")], "")?
        .expect_code(0)?
        .stdout_is(&format!("{CLIPBOARD}clipboard {RED}RED\n"))?;
    Ok(())
}

fn failure_line_escaped() -> Result<(), String> {
    let args = [
        "info",
        "--",
        "sh",
        "-c",
        r#"printf "\033]0;owned\007x\n" >&2; exit 1"#,
    ]
    .map(String::from);
    let run = run(&args, &[], "")?;
    run.expect_code(3)?
        .one_error_line("its stderr ended with: \\u{1b}]0;owned\\u{7}x")?;
    if run.stderr.contains(['\x1b', '\x07']) {
        return Err(format!("raw control bytes in the error: {:?}", run.stderr));
    }
    Ok(())
}

fn error_escaped() -> Result<(), String> {
    let run = cli(EVIL, &["call", &format!("paint{RED}"), "fail=true"], "")?;
    run.expect_code(1)?.one_error_line(&format!(
        "the server answered tools/call paint\\u{{1b}}[31m with an error: it failed{} | badly (-32603)",
        TITLE.escape_debug()
    ))?;
    Ok(())
}

/// An item's line (its name, the first line of its description) is
/// escaped wherever it goes: one item, one line (the description's title
/// change too, since the review of issue 49: a lone `\r` or U+2028 in it
/// broke the line).
fn newline_name() -> Result<(), String> {
    cli(EVIL, &["tools"], "")?
        .expect_code(0)?
        .stdout_is(&format!(
            "paint\\u{{1b}}[31m  Paints {}the title.\ntwo\\nlines       A name with a newline.\n",
            TITLE.escape_debug()
        ))?;
    Ok(())
}

/// Left16, item 3: every line of the command line's own on stderr that
/// quotes a server's error is escaped, wherever stderr goes (here a pipe):
/// a tool's JSON-RPC error that clears the screen (ESC [ 2 J), returns
/// over the line (a lone CR) and writes the clipboard (OSC 52), as the
/// error line and with `--json`; and the note on a legacy server's failed
/// `logging/setLevel`, which main wrote as the server sent it unless
/// stderr was a terminal (the client's notes, which the library's own
/// stderr hook escapes wherever they go, likewise).
fn error_escaped_in_every_line() -> Result<(), String> {
    let clean = |run: &Run, what: &str| {
        if run.stderr.contains(['\x1b', '\r', '\x07']) {
            return Err(format!(
                "{what}: raw control bytes on stderr: {:?}",
                run.stderr
            ));
        }
        Ok(())
    };
    let paint = format!("paint{RED}");
    let call = cli(EVIL, &["call", &paint, "fail=clear"], "")?;
    call.expect_code(1)?.one_error_line(&format!(
        "with an error: {}{} over (-32603)",
        CLEAR.escape_debug(),
        CLIPBOARD.escape_debug()
    ))?;
    clean(&call, "call")?;
    let json = cli(EVIL, &["--json", "call", &paint, "fail=clear"], "")?;
    json.expect_code(1)?;
    clean(&json, "--json call")?;
    let legacy = cli(EVIL_LEGACY, &["--log-level", "debug", "call", "form"], "")?;
    legacy.expect_code(0)?.stderr_has("logging/setLevel")?;
    clean(&legacy, "--log-level on a legacy server")?;
    let json = cli(
        EVIL_LEGACY,
        &["--json", "--log-level", "debug", "call", "form"],
        "",
    )?;
    json.expect_code(0)?.stderr_has("logging/setLevel")?;
    clean(&json, "--json --log-level on a legacy server")?;
    Ok(())
}

/// Review left16: the line the command line writes on declining a form
/// (`--decline`, a flag for scripts, whose stderr is a pipe or a log)
/// quotes the server's message: escaped wherever stderr goes, as the
/// notes now are. On left16 it goes through `Stderr::line`, escaped only
/// on a terminal: the message's ESC [ 2 J, lone CR and OSC 52 reach the
/// log as the server sent them.
fn declined_form_escaped_in_a_pipe() -> Result<(), String> {
    let setup = Setup {
        mode: "fake:evil-form",
        era: "auto",
    };
    let run = cli(setup, &["--decline", "call", "form"], "")?;
    run.expect_code(0)?.stderr_has("declined (--decline)")?;
    if run.stderr.contains(['\x1b', '\r', '\x07']) {
        return Err(format!("raw control bytes on stderr: {:?}", run.stderr));
    }
    Ok(())
}

//! Issue 49, item 7: the smaller things.

use std::time::{Duration, Instant};

use crate::{MODERN, Once, Setup, cli, run};

pub const CHECKS: &[(&str, Once)] = &[
    (
        "listen_resources_on_a_server_without_them_exits",
        listen_nothing,
    ),
    ("header_with_a_stdio_server_is_refused", header_with_stdio),
    ("did_you_mean_an_option_or_a_command", did_you_mean),
    ("a_tool_that_needs_tasks_gets_a_hint", tasks_hint),
];

/// `listen --resources -- echo` printed "listening: nothing" and waited
/// for ever (the review's reading; issue 43, item 6 had fixed it already:
/// this passed before).
fn listen_nothing() -> Result<(), String> {
    let setup = Setup {
        mode: "tools-only",
        era: "auto",
    };
    let started = Instant::now();
    cli(setup, &["listen", "--resources"], "")?
        .expect_code(0)?
        .stdout_is("nothing to listen to: the server offers tools\n")?;
    if started.elapsed() > Duration::from_secs(10) {
        return Err(format!("took {:?}", started.elapsed()));
    }
    Ok(())
}

/// `--header` with a server after `--` was ignored without a word.
fn header_with_stdio() -> Result<(), String> {
    cli(
        MODERN,
        &["tools", "--header", "Authorization: Bearer x"],
        "",
    )?
    .expect_code(2)?
    .one_error_line(
        "--header applies to an HTTP server (--url, or a config entry with \"url\") only",
    )?;
    Ok(())
}

/// `--jsn` and `tool` got "unknown" and nothing more.
fn did_you_mean() -> Result<(), String> {
    let args = ["--jsn", "tools", "--", "x"].map(String::from);
    run(&args, &[], "")?
        .expect_code(2)?
        .one_error_line("unknown option --jsn; did you mean \"--json\"?")?;
    let args = ["tool", "--", "x"].map(String::from);
    run(&args, &[], "")?
        .expect_code(2)?
        .one_error_line("unknown command \"tool\"; did you mean \"tools\"?")?;
    Ok(())
}

/// `call failing_job` ended with a bare "missing required client
/// capability: extensions (-32021)".
fn tasks_hint() -> Result<(), String> {
    cli(MODERN, &["call", "failing_job"], "")?
        .expect_code(1)?
        .one_error_line("tools/call failing_job needs the Tasks extension (io.modelcontextprotocol/tasks), which mcp-stdio does not declare: it runs tools that answer within the call")?;
    Ok(())
}

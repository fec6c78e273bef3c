//! Issue 49, item 4: one failure, one exit status, one true line.

use crate::{MODERN, Once, Setup, cli, me, run, scratch};

pub const CHECKS: &[(&str, Once)] = &[
    ("save_failure_exits_2_on_stderr", save_failure),
    ("save_never_overwrites", save_never_overwrites),
    ("unknown_tool_and_prompt_exit_alike", unknown_names),
    ("url_without_http_is_a_usage_error", url_without_scheme),
    ("a_wrong_urls_secrets_are_not_repeated", wrong_url_secrets),
    ("config_missing_cwd_says_so", config_missing_cwd),
    ("legacy_form_without_answers_says_how", legacy_form_unfilled),
];

/// `--save` into a path that is a file printed "(not saved ...)" on stdout
/// and exited 0.
fn save_failure() -> Result<(), String> {
    let dir = scratch("save-failure");
    let file = dir.join("a-file");
    std::fs::write(&file, "").map_err(|e| e.to_string())?;
    let file = file.to_string_lossy().into_owned();
    let run = cli(
        MODERN,
        &["read", "test://static-binary", "--save", &file],
        "",
    )?;
    run.expect_code(2)?
        .one_error_line(&format!("cannot save to {file}: "))?;
    if run.stdout.contains("not saved") {
        return Err(format!("the failure is on stdout: {:?}", run.stdout));
    }
    Ok(())
}

/// A second run wrote `test_image_content-1.png` again, over the first.
fn save_never_overwrites() -> Result<(), String> {
    let dir = scratch("save-twice");
    let dir_text = dir.to_string_lossy().into_owned();
    let args = ["call", "test_image_content", "--save", &dir_text];
    cli(MODERN, &args, "")?
        .expect_code(0)?
        .stdout_has("test_image_content-1.png]")?;
    cli(MODERN, &args, "")?
        .expect_code(0)?
        .stdout_has("test_image_content-2.png]")?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// `call nosuch` exited 2, `complete prompt nosuch x y` 1.
fn unknown_names() -> Result<(), String> {
    cli(MODERN, &["call", "nosuch"], "")?
        .expect_code(2)?
        .one_error_line("the server has no tool named \"nosuch\"")?;
    cli(MODERN, &["complete", "prompt", "nosuch", "x", "y"], "")?
        .expect_code(2)?
        .one_error_line("the server has no prompt named \"nosuch\"")?;
    cli(MODERN, &["prompt", "nosuch"], "")?
        .expect_code(2)?
        .one_error_line("the server has no prompt named \"nosuch\"")?;
    Ok(())
}

/// `--url example.com/mcp` exited 3, as if the server had failed.
fn url_without_scheme() -> Result<(), String> {
    let args = ["info", "--url", "example.com/mcp"].map(String::from);
    run(&args, &[], "")?
        .expect_code(2)?
        .one_error_line("--url takes an http:// or https:// URL, not \"example.com/mcp\"")?;
    Ok(())
}

/// Issue 46, item 5: the refusal of a URL that is not http(s) repeated it
/// whole, its password and query (a server's key) included: "--url takes
/// an http:// or https:// URL, not \"ftp://me:pw-SECRET@h.example/mcp?key=Q-SECRET\"".
fn wrong_url_secrets() -> Result<(), String> {
    let args = [
        "info",
        "--url",
        "ftp://me:pw-SECRET@h.example/mcp?key=Q-SECRET",
    ]
    .map(String::from);
    run(&args, &[], "")?
        .expect_code(2)?
        .one_error_line("--url takes an http:// or https:// URL, not \"ftp://h.example/mcp\"")?;
    Ok(())
}

/// A `cwd` that does not exist was reported as the command not being found
/// on PATH.
fn config_missing_cwd() -> Result<(), String> {
    let dir = scratch("missing-cwd");
    let file = dir.join("mcp.json");
    let config = serde_json::json!({ "mcpServers": { "x": { "command": me(), "cwd": "rel" } } });
    std::fs::write(&file, config.to_string()).map_err(|e| e.to_string())?;
    let file = file.to_string_lossy().into_owned();
    let args = ["tools", "--config", &file].map(String::from);
    run(&args, &[], "")?
        .expect_code(2)?
        .one_error_line(&format!(
            "server \"x\" in {file}: its cwd {} does not exist",
            dir.join("rel").display()
        ))?;
    Ok(())
}

/// A legacy server's form that no `--answer` fills printed `null` and
/// exited 0; the `--answer` hint went only to the server.
fn legacy_form_unfilled() -> Result<(), String> {
    let setup = Setup {
        mode: "fake:form",
        era: "auto",
    };
    cli(setup, &["call", "form"], "")?
        .expect_code(2)?
        .stdout_is("")?
        .one_error_line("the server asks \"Your details\" and no one can be asked here: pass --answer zeta=TEXT --answer alpha=NUMBER --answer mail=EMAIL, or --decline, or run in a terminal")?;
    Ok(())
}

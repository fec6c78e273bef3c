//! The options' values read and checked (`--era`, `--timeout`, a URL, the
//! bearer token, ...), and the options refused for a command they mean
//! nothing to.

use std::time::Duration;

use mcp_stdio::EraPolicy;
use mcp_stdio::types::LoggingLevel;
use serde_json::Value;

use super::{Command, Flags, UsageError, usage};

/// `--header` names a stdio server, to which no header can be sent.
pub fn header_for_stdio() -> UsageError {
    usage("--header applies to an HTTP server (--url, or a config entry with \"url\") only")
}

/// `--cacert` names a stdio server, which has no certificate.
pub fn cacert_for_stdio() -> UsageError {
    usage("--cacert applies to an https server (--url, or a config entry with \"url\") only")
}

/// A server's URL: `http://`, or `https://` in a binary built with the
/// `https` feature.
pub fn check_url(url: &str, what: &str) -> Result<(), UsageError> {
    let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
    match scheme.as_deref() {
        Some("http") => Ok(()),
        Some("https") if cfg!(feature = "https") => Ok(()),
        Some("https") => Err(usage(format!(
            "{what} is an https:// URL, and this mcp-stdio has no TLS: build it with --features https (cargo install mcp-stdio --features https)"
        ))),
        _ => Err(usage(format!(
            "{what} takes an http:// or https:// URL, not {:?}",
            crate::url_for_people::url_for_people(url)
        ))),
    }
}

/// `--era auto|modern|legacy`.
pub(super) fn era(text: &str) -> Result<EraPolicy, UsageError> {
    match text {
        "auto" => Ok(EraPolicy::Auto),
        "modern" => Ok(EraPolicy::ModernOnly),
        "legacy" => Ok(EraPolicy::LegacyOnly),
        other => Err(usage(format!(
            "--era takes auto, modern or legacy, not {other:?}"
        ))),
    }
}

/// `--timeout SECS`: above 0, finite.
pub(super) fn timeout(text: &str) -> Result<Duration, UsageError> {
    let secs: f64 = text
        .parse()
        .ok()
        .filter(|s: &f64| s.is_finite() && *s > 0.0 && *s < 1e9)
        .ok_or_else(|| {
            usage(format!(
                "--timeout takes a number of seconds above 0, not {text:?}"
            ))
        })?;
    Ok(Duration::from_secs_f64(secs))
}

/// `--log-level LEVEL`, in any case.
pub(super) fn log_level(text: &str) -> Result<LoggingLevel, UsageError> {
    serde_json::from_value(Value::String(text.to_lowercase())).map_err(|_| {
        usage(format!(
            "--log-level takes debug, info, notice, warning, error, critical, alert or emergency, not {text:?}"
        ))
    })
}

/// `--header 'Name: value'`.
pub(super) fn header(text: &str) -> Result<(String, String), UsageError> {
    let Some((name, value)) = text.split_once(':') else {
        return Err(usage(format!("--header takes 'Name: value', not {text:?}")));
    };
    Ok((name.trim().to_owned(), value.trim().to_owned()))
}

/// Where `serve-http` finds its bearer token when no option gives it.
pub const BEARER_TOKEN_ENV: &str = "MCP_STDIO_BEARER_TOKEN";

/// The token `serve-http` requires: `--bearer-token`, else the one line
/// of `--bearer-token-file` (blank lines around it ignored; a file of two
/// is refused, rather than one of them used without a word), else
/// `MCP_STDIO_BEARER_TOKEN`. The two last keep it out of the command line,
/// which `ps` shows to every user.
pub(super) fn bearer_token(flags: &Flags) -> Result<Option<String>, UsageError> {
    let token = match (&flags.bearer_token, &flags.bearer_token_file) {
        (Some(_), Some(_)) => {
            return Err(usage(
                "give the token with --bearer-token or --bearer-token-file, not both",
            ));
        }
        (Some(token), None) => token.clone(),
        (None, Some(file)) => {
            let named = || format!("--bearer-token-file {}", file.display());
            let text =
                std::fs::read_to_string(file).map_err(|e| usage(format!("{}: {e}", named())))?;
            let lines: Vec<&str> = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            match lines.as_slice() {
                [] => return Err(usage(format!("{}: the file is empty", named()))),
                [token] => (*token).to_owned(),
                more => {
                    return Err(usage(format!(
                        "{}: {} lines, where the token alone is expected: write it on one line",
                        named(),
                        more.len()
                    )));
                }
            }
        }
        (None, None) => match std::env::var(BEARER_TOKEN_ENV) {
            Ok(token) => token.trim().to_owned(),
            Err(_) => return Ok(None),
        },
    };
    if token.is_empty() {
        return Err(usage("the bearer token is empty"));
    }
    Ok(Some(token))
}

/// A line to warn with when a file of secrets (`--bearer-token-file`,
/// `--token-file`, `--introspect-credentials`) can be read by users other
/// than its owner (its mode gives group or others any right): the option
/// exists to keep the secret from them. A warning, not a refusal (as ssh
/// refuses a key file): secrets mounted by container platforms are often
/// 0644 in a directory only the service reaches.
pub(super) fn token_file_warning(flags: &Flags) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let files = [
            ("--bearer-token-file", &flags.bearer_token_file),
            ("--token-file", &flags.token_file),
            ("--introspect-credentials", &flags.introspect_credentials),
        ];
        files.into_iter().find_map(|(option, file)| {
            let file = file.as_ref()?;
            let mode = std::fs::metadata(file).ok()?.permissions().mode() & 0o777;
            (mode & 0o077 != 0).then(|| {
                format!(
                    "{option} {}: other users may read it (mode {mode:o}): chmod 600 it",
                    file.display()
                )
            })
        })
    }
    #[cfg(not(unix))]
    {
        let _ = flags;
        None
    }
}

/// `--max-body-bytes N`: above 0.
pub(super) fn max_body_bytes(text: &str) -> Result<usize, UsageError> {
    text.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
        usage(format!(
            "--max-body-bytes takes a number of bytes above 0, not {text:?}"
        ))
    })
}

/// Refuses options that mean nothing for the command, so that a typo does
/// not pass unnoticed.
pub(super) fn check_applies(command: &Command, flags: &Flags) -> Result<(), UsageError> {
    let is_list = matches!(command, Command::List(_));
    let is_listen = matches!(command, Command::Listen(_));
    let saves = matches!(command, Command::Call { .. } | Command::Read { .. });
    let serves = matches!(command, Command::ServeHttp(_));
    let misplaced = [
        (
            flags.long && !is_list,
            "--long",
            "tools, resources, templates and prompts",
        ),
        (flags.save.is_some() && !saves, "--save", "call and read"),
        (flags.tools && !is_listen, "--tools", "listen"),
        (flags.prompts && !is_listen, "--prompts", "listen"),
        (flags.resources && !is_listen, "--resources", "listen"),
        (
            !flags.resource.is_empty() && !is_listen,
            "--resource",
            "listen",
        ),
        (flags.listen.is_some() && !serves, "--listen", "serve-http"),
        (
            !flags.allow_origins.is_empty() && !serves,
            "--allow-origin",
            "serve-http",
        ),
        (
            !flags.allow_hosts.is_empty() && !serves,
            "--allow-host",
            "serve-http",
        ),
        (
            flags.max_body_bytes.is_some() && !serves,
            "--max-body-bytes",
            "serve-http",
        ),
        (
            flags.bearer_token.is_some() && !serves,
            "--bearer-token",
            "serve-http",
        ),
        (
            flags.bearer_token_file.is_some() && !serves,
            "--bearer-token-file",
            "serve-http",
        ),
        (
            !flags.authorization_servers.is_empty() && !serves,
            "--authorization-server",
            "serve-http",
        ),
        (
            flags.oauth_resource.is_some() && !serves,
            "--oauth-resource",
            "serve-http",
        ),
        (!flags.scopes.is_empty() && !serves, "--scope", "serve-http"),
        (
            flags.token_file.is_some() && !serves,
            "--token-file",
            "serve-http",
        ),
        (
            flags.introspect.is_some() && !serves,
            "--introspect",
            "serve-http",
        ),
        (
            flags.introspect_credentials.is_some() && !serves,
            "--introspect-credentials",
            "serve-http",
        ),
    ];
    match misplaced.iter().find(|(wrong, ..)| *wrong) {
        Some((_, option, commands)) => Err(usage(format!("{option} applies to {commands} only"))),
        None => Ok(()),
    }
}

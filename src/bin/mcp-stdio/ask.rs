//! Input for the server: a form asked field by field on the terminal (or
//! taken from `--answer key=value`; the fields are in `form`), `--decline`,
//! the roots of `--roots`, and sampling answered with `--sampling-reply` or
//! declined.
//!
//! The same handlers serve both eras: a modern server's multi round-trip
//! `inputRequests` and a legacy server's `elicitation/create`,
//! `sampling/createMessage` and `roots/list` requests.
//!
//! Without a terminal (and without `--interactive`) nobody can be asked:
//! a field that `--answer` does not give and that has no default makes the
//! request fail, with a message naming the `--answer` to pass. Failing was
//! chosen over declining: a script that forgot an answer should stop and
//! say so, not carry on with whatever the server does with a refusal. The
//! command then exits with status 2, as for any other missing argument.

use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use mcp_stdio::Error;
use mcp_stdio::types::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestFormParams, ElicitRequestParams,
    ElicitResult, ListRootsResult, Role, Root, SamplingContent, SamplingMessageContentBlock,
    TextContent,
};
use serde_json::Map;

use crate::form::fill;
use crate::stderr::Stderr;

/// The answers the command line can give.
#[derive(Debug)]
pub struct Asker {
    answers: BTreeMap<String, String>,
    decline: bool,
    /// Whether a person can be asked on stdin.
    interactive: bool,
    sampling_reply: Option<String>,
    roots: Vec<Root>,
    stderr: Arc<Stderr>,
    /// Why input could not be given: the message the command ends with.
    refused: Mutex<Option<String>>,
    /// One question at a time: a legacy server may ask two at once.
    asking: Mutex<()>,
    /// The forms asked, each its message and its fields' names: an
    /// `--answer` that names a field of none of them is a mistake
    /// (`unused_answers`).
    forms: Mutex<Vec<(String, Vec<String>)>>,
}

impl Asker {
    pub fn new(
        answers: BTreeMap<String, String>,
        decline: bool,
        interactive: bool,
        sampling_reply: Option<String>,
        roots: Vec<Root>,
        stderr: Arc<Stderr>,
    ) -> Asker {
        Asker {
            answers,
            decline,
            interactive,
            sampling_reply,
            roots,
            stderr,
            refused: Mutex::new(None),
            asking: Mutex::new(()),
            forms: Mutex::new(Vec::new()),
        }
    }

    /// The first `--answer` that named no field of any form the server
    /// asked, as the failure to end with: a key mistyped (`--answer nmae=`)
    /// would otherwise be dropped without a word. Nothing under
    /// `--decline`, which uses no answer.
    pub fn unused_answers(&self) -> Option<String> {
        if self.decline {
            return None;
        }
        let forms = self.forms.lock().unwrap_or_else(|e| e.into_inner());
        let (key, value) = self
            .answers
            .iter()
            .find(|(key, _)| !forms.iter().any(|(_, fields)| fields.contains(key)))?;
        let answer = crate::escape::line(&format!("--answer {key}={value}")).into_owned();
        Some(match forms.as_slice() {
            [] => format!("{answer} was not used: the server asked for no input"),
            [(message, fields)] => format!(
                "{answer} names no field of the form {message:?} (its fields: {})",
                fields.join(", ")
            ),
            forms => {
                let each: Vec<String> = forms
                    .iter()
                    .map(|(message, fields)| format!("{message:?}: {}", fields.join(", ")))
                    .collect();
                format!(
                    "{answer} names no field of the forms the server asked ({})",
                    each.join("; ")
                )
            }
        })
    }

    /// Why input could not be given, if it could not.
    pub fn refused(&self) -> Option<String> {
        self.refused
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Records why input could not be given (the command then fails with
    /// `message` and status 2), and the error for the client.
    pub fn refuse(&self, message: String) -> Error {
        *self.refused.lock().unwrap_or_else(|e| e.into_inner()) = Some(message.clone());
        Error::Protocol(message)
    }

    /// Answers an elicitation: declined with `--decline`, else a form
    /// filled from `--answer` and the terminal, or a URL the user opens.
    pub fn elicit(&self, params: &ElicitRequestParams) -> Result<ElicitResult, Error> {
        let _one = self.asking.lock().unwrap_or_else(|e| e.into_inner());
        let message = match params {
            ElicitRequestParams::Form(form) => &form.message,
            ElicitRequestParams::Url(url) => &url.message,
        };
        if self.decline {
            // A line for a script's log (`--decline`): the server's
            // message escaped wherever stderr goes, as a note is.
            let message = crate::escape::text(message);
            self.stderr
                .line(&format!("declined (--decline): {message}"));
            return Ok(ElicitResult::decline());
        }
        match params {
            ElicitRequestParams::Form(form) => self.form(form),
            ElicitRequestParams::Url(url) if self.interactive => {
                self.stderr.line(&format!("the server asks: {}", url.message));
                self.stderr.line(&format!("  open {}", url.url));
                self.stderr.ask("  press Enter once done (Ctrl-D cancels): ");
                Ok(match read_stdin_line() {
                    Some(_) => ElicitResult::accept(Map::new()),
                    None => ElicitResult::cancel(),
                })
            }
            ElicitRequestParams::Url(url) => Err(self.refuse(format!(
                "the server asks you to open {} ({}), and no one can be asked here: run in a terminal, or pass --decline",
                url.url, url.message
            ))),
        }
    }

    fn form(&self, form: &ElicitRequestFormParams) -> Result<ElicitResult, Error> {
        let fields = form.requested_schema.properties.keys().cloned().collect();
        (self.forms.lock().unwrap_or_else(|e| e.into_inner())).push((form.message.clone(), fields));
        let stderr = &self.stderr;
        let mut say = |text: &str| stderr.line(text);
        // Typed answers end their own line on a terminal; piped ones
        // (`--interactive`) are echoed, so that stderr reads as a dialogue.
        let echo = !std::io::stdin().is_terminal();
        let filled = if self.interactive {
            let mut ask = |prompt: &str| {
                stderr.ask(prompt);
                let line = read_stdin_line();
                if echo {
                    stderr.line(line.as_deref().unwrap_or(""));
                }
                line
            };
            fill(form, &self.answers, Some(&mut ask), &mut say)
        } else {
            fill(form, &self.answers, None, &mut say)
        };
        match filled {
            Ok(Some(content)) => Ok(ElicitResult::accept(content)),
            Ok(None) => {
                stderr.line("cancelled");
                Ok(ElicitResult::cancel())
            }
            Err(message) => Err(self.refuse(message)),
        }
    }

    /// Answers sampling with `--sampling-reply` (the handler is installed
    /// only when it was given).
    pub fn sample(
        &self,
        params: &CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, Error> {
        let reply = self.sampling_reply.clone().unwrap_or_default();
        let question = params
            .messages
            .iter()
            .rev()
            .flat_map(|m| m.content.blocks())
            .find_map(|b| match b {
                SamplingMessageContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .unwrap_or("");
        self.stderr.line(&format!(
            "sampling: the server asks a model {question:?}; answering {reply:?} (--sampling-reply)"
        ));
        Ok(CreateMessageResult {
            role: Role::Assistant,
            content: SamplingContent::Single(SamplingMessageContentBlock::Text(TextContent::new(
                reply,
            ))),
            model: "mcp-stdio --sampling-reply".to_owned(),
            stop_reason: Some("endTurn".to_owned()),
            meta: None,
        })
    }

    /// The roots of `--roots` (the handler is installed only when some
    /// were given).
    pub fn roots(&self) -> Result<ListRootsResult, Error> {
        Ok(ListRootsResult {
            roots: self.roots.clone(),
        })
    }
}

/// The roots for `--roots DIR`: each directory as a `file://` URI named
/// after its last component. A directory that does not exist is an error.
pub fn roots(dirs: &[PathBuf]) -> Result<Vec<Root>, String> {
    dirs.iter()
        .map(|dir| {
            let path = dir
                .canonicalize()
                .map_err(|e| format!("--roots {}: {e}", dir.display()))?;
            if !path.is_dir() {
                return Err(format!("--roots {}: not a directory", dir.display()));
            }
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            Ok(Root {
                uri: file_uri(&path.to_string_lossy()),
                name,
                meta: None,
            })
        })
        .collect()
}

/// `file://` and the path, with what a URI cannot hold percent-encoded.
fn file_uri(path: &str) -> String {
    let mut uri = String::from("file://");
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~!$&'()*+,;=:@".contains(&byte) {
            uri.push(byte as char);
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri
}

/// One line from stdin, without its newline; `None` at end of input.
fn read_stdin_line() -> Option<String> {
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim_end_matches(['\n', '\r']).to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_are_encoded() {
        assert_eq!(file_uri("/tmp/a b/c%"), "file:///tmp/a%20b/c%25");
    }
}

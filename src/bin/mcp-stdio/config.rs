//! `--config FILE --server NAME`: a server from the JSON file MCP hosts keep
//! their servers in.
//!
//! Claude Desktop and Cursor write `{"mcpServers": {NAME: {...}}}`; VS Code
//! writes `{"servers": {NAME: {...}}}` in `.vscode/mcp.json` (and `"mcp":
//! {"servers": ...}` in its settings), with comments and trailing commas
//! allowed. An entry has `command`, `args`, `env` and `cwd`; VS Code adds
//! `type` (`stdio`, or `http`/`sse` for remote servers). An entry with a
//! `url` (and `headers`) is a Streamable HTTP server, reached when this
//! binary is built with the `http` feature; `sse` (the 2024-11-05 HTTP+SSE
//! transport) is refused. VS Code's variables: `${workspaceFolder}`, `${userHome}` and
//! `${env:NAME}` are replaced; `${input:...}` needs VS Code's own prompt
//! and is refused.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

/// One server entry, ready to spawn (or, with `url`, to connect to).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// Empty for a remote server.
    pub command: String,
    /// A Streamable HTTP server's URL.
    pub url: Option<String>,
    /// The headers to send to it.
    pub headers: BTreeMap<String, String>,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub cwd: Option<PathBuf>,
}

impl ServerConfig {
    /// The process to spawn: the entry's environment on top of ours.
    pub fn command(&self) -> std::process::Command {
        let mut command = std::process::Command::new(&self.command);
        command.args(&self.args).envs(&self.env);
        if let Some(cwd) = &self.cwd {
            command.current_dir(cwd);
        }
        command
    }
}

#[derive(Deserialize)]
struct Entry {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, Value>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

/// Reads `file` and picks the server `name` (or the only one).
pub fn load(file: &Path, name: Option<&str>) -> Result<ServerConfig, String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let servers = servers(&text).map_err(|e| format!("{}: {e}", file.display()))?;
    let mut names: Vec<&String> = servers.keys().collect();
    names.sort();
    let list = names
        .iter()
        .map(|n| n.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let (name, entry) = match name {
        Some(name) => match servers.get(name) {
            Some(entry) => (name, entry),
            None => {
                return Err(format!(
                    "{} has no server {name:?}{}",
                    file.display(),
                    crate::suggest::hint(name, names.iter().map(|n| n.as_str()))
                ));
            }
        },
        None if servers.len() == 1 => {
            let (name, entry) = servers.iter().next().expect("one server");
            (name.as_str(), entry)
        }
        None => {
            return Err(format!(
                "{} has {} servers; choose one with --server NAME: {list}",
                file.display(),
                servers.len()
            ));
        }
    };
    let entry: Entry = serde_json::from_value(entry.clone())
        .map_err(|e| format!("server {name:?} in {}: {e}", file.display()))?;
    resolve(name, entry, file)
}

/// The servers of a config file's text: `mcpServers`, `servers` or
/// `mcp.servers`.
fn servers(text: &str) -> Result<Map<String, Value>, String> {
    let root: Value =
        serde_json::from_str(&strip_jsonc(text)).map_err(|e| format!("not valid JSON: {e}"))?;
    let found = root
        .get("mcpServers")
        .or_else(|| root.get("servers"))
        .or_else(|| root.pointer("/mcp/servers"));
    match found {
        Some(Value::Object(map)) => Ok(map.clone()),
        Some(_) => Err("its server list is not an object".into()),
        None => Err("no \"mcpServers\" (nor VS Code's \"servers\") in it".into()),
    }
}

/// Checks an entry and replaces its variables.
fn resolve(name: &str, entry: Entry, file: &Path) -> Result<ServerConfig, String> {
    let vars = Vars::for_file(file);
    if let Some(kind) = entry
        .kind
        .as_deref()
        .filter(|k| !matches!(*k, "stdio" | "http" | "streamable-http"))
    {
        return Err(format!(
            "server {name:?} is a {kind} server; mcp-stdio speaks to stdio and Streamable HTTP servers only"
        ));
    }
    if let (None, Some(url)) = (&entry.command, entry.url) {
        let mut headers = BTreeMap::new();
        for (key, value) in entry.headers {
            headers.insert(key, vars.expand(&value)?);
        }
        return Ok(ServerConfig {
            command: String::new(),
            url: Some(vars.expand(&url)?),
            headers,
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
        });
    }
    let Some(command) = entry.command else {
        return Err(format!("server {name:?} has no \"command\" (nor \"url\")"));
    };
    let mut env = BTreeMap::new();
    for (key, value) in entry.env {
        let text = match value {
            Value::String(s) => s,
            other => other.to_string(),
        };
        env.insert(key, vars.expand(&text)?);
    }
    let base = file.parent().unwrap_or(Path::new("."));
    let cwd = match entry.cwd {
        Some(cwd) => Some(base.join(vars.expand(&cwd)?)),
        None => None,
    };
    // Said here: spawning in a missing directory fails as if the command
    // were missing ("not found").
    if let Some(cwd) = cwd.as_ref().filter(|cwd| !cwd.is_dir()) {
        let what = if cwd.exists() {
            "is not a directory"
        } else {
            "does not exist"
        };
        return Err(format!(
            "server {name:?} in {}: its cwd {} {what}",
            file.display(),
            cwd.display()
        ));
    }
    Ok(ServerConfig {
        command: vars.expand(&command)?,
        url: None,
        headers: BTreeMap::new(),
        args: entry
            .args
            .iter()
            .map(|a| vars.expand(a))
            .collect::<Result<_, _>>()?,
        env,
        cwd,
    })
}

/// VS Code's variables.
struct Vars {
    workspace: PathBuf,
}

impl Vars {
    /// The workspace of `.vscode/mcp.json` is the folder holding `.vscode`;
    /// of any other file, its own folder.
    fn for_file(file: &Path) -> Vars {
        let dir = file
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        let workspace = match dir.file_name() {
            Some(last) if last == ".vscode" => dir.parent().unwrap_or(&dir).to_path_buf(),
            _ => dir,
        };
        Vars { workspace }
    }

    fn expand(&self, text: &str) -> Result<String, String> {
        let mut out = String::new();
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let Some(len) = rest[start..].find('}') else {
                out.push_str(&rest[start..]);
                return Ok(out);
            };
            let var = &rest[start + 2..start + len];
            match var {
                "workspaceFolder" => out.push_str(&self.workspace.to_string_lossy()),
                "userHome" => out.push_str(&std::env::var("HOME").unwrap_or_default()),
                _ if var.starts_with("env:") => {
                    out.push_str(&std::env::var(&var[4..]).unwrap_or_default());
                }
                _ => {
                    return Err(format!(
                        "${{{var}}} cannot be filled in outside VS Code; put the value in the file"
                    ));
                }
            }
            rest = &rest[start + len + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }
}

/// JSON with comments (`//`, `/* */`) and trailing commas, as VS Code
/// writes it, turned into JSON. Strings are left alone.
fn strip_jsonc(text: &str) -> String {
    drop_trailing_commas(&drop_comments(text))
}

/// Calls `f` for every character outside strings (`Some(c)`), and copies
/// strings through as they are.
fn outside_strings(
    text: &str,
    mut f: impl FnMut(char, &mut std::iter::Peekable<std::str::Chars<'_>>, &mut String),
) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                '\\' => out.extend(chars.next()),
                '"' => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else {
            f(c, &mut chars, &mut out);
        }
    }
    out
}

fn drop_comments(text: &str) -> String {
    outside_strings(text, |c, chars, out| match (c, chars.peek()) {
        ('/', Some('/')) => while chars.next_if(|&c| c != '\n').is_some() {},
        ('/', Some('*')) => {
            chars.next();
            let mut last = ' ';
            for c in chars.by_ref() {
                if last == '*' && c == '/' {
                    break;
                }
                last = c;
            }
            out.push(' ');
        }
        _ => out.push(c),
    })
}

/// Drops a comma that only whitespace separates from a closing bracket.
fn drop_trailing_commas(text: &str) -> String {
    outside_strings(text, |c, chars, out| {
        if c == ',' {
            let next = chars.clone().find(|c| !c.is_whitespace());
            if matches!(next, Some('}' | ']')) {
                return;
            }
        }
        out.push(c);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("mcp-stdio-cli-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn claude_desktop_format() {
        let file = write(
            "claude.json",
            r#"{"mcpServers": {"files": {"command": "npx", "args": ["-y", "srv", "${env:MCP_STDIO_CLI_TEST_HOME}"], "env": {"DEBUG": "1", "N": 2}}}}"#,
        );
        let config = load(&file, Some("files")).unwrap();
        assert_eq!(config.command, "npx");
        // An unset variable is empty, as in VS Code.
        assert_eq!(config.args, ["-y", "srv", ""]);
        assert_eq!(config.env.get("DEBUG").map(String::as_str), Some("1"));
        assert_eq!(config.env.get("N").map(String::as_str), Some("2"));
        assert_eq!(config.cwd, None);
        // The only server needs no name.
        assert_eq!(load(&file, None).unwrap(), config);
    }

    #[test]
    fn vs_code_format_with_comments_and_variables() {
        let file = write(
            "vscode.json",
            "{\n  // my servers\n  \"servers\": {\n    \"a\": { \"type\": \"stdio\", \"command\": \"${workspaceFolder}/srv\", \"cwd\": \"sub\", /* x */ },\n    \"web\": { \"type\": \"http\", \"url\": \"http://example.com/mcp\", \"headers\": { \"Authorization\": \"Bearer ${env:MCP_STDIO_CLI_TEST_HOME}\" } },\n    \"old\": { \"type\": \"sse\", \"url\": \"http://x/sse\" },\n    \"b\": { \"command\": \"b\", \"args\": [\"http://x//y\", \"a,}\"] },\n  },\n}\n",
        );
        std::fs::create_dir_all(file.parent().unwrap().join("sub")).unwrap();
        let a = load(&file, Some("a")).unwrap();
        let dir = file.parent().unwrap().canonicalize().unwrap();
        assert_eq!(a.command, format!("{}/srv", dir.display()));
        assert_eq!(a.cwd, Some(file.parent().unwrap().join("sub")));
        let b = load(&file, Some("b")).unwrap();
        assert_eq!(b.args, ["http://x//y", "a,}"]);
        let web = load(&file, Some("web")).unwrap();
        assert_eq!(web.url.as_deref(), Some("http://example.com/mcp"));
        assert!(web.headers["Authorization"].starts_with("Bearer "));
        assert!(!web.headers["Authorization"].contains("${"));
        let e = load(&file, Some("old")).unwrap_err();
        assert!(e.contains("is a sse server"), "{e}");
        let e = load(&file, None).unwrap_err();
        assert!(
            e.ends_with("choose one with --server NAME: a, b, old, web"),
            "{e}"
        );
        let e = load(&file, Some("aa")).unwrap_err();
        assert!(e.contains("has no server \"aa\""), "{e}");
    }

    #[test]
    fn mistakes_are_named() {
        let file = write(
            "bad.json",
            r#"{"servers": {"x": {"command": "${input:key}"}}}"#,
        );
        assert!(load(&file, None).unwrap_err().contains("${input:key}"));
        let file = write("none.json", r#"{"other": {}}"#);
        assert!(load(&file, None).unwrap_err().contains("no \"mcpServers\""));
        let file = write("broken.json", r#"{"mcpServers": {"#);
        assert!(load(&file, None).unwrap_err().contains("not valid JSON"));
        let missing = Path::new("/nonexistent/mcp.json");
        assert!(load(missing, None).unwrap_err().starts_with("cannot read"));
    }
}

//! OAuth for a person at the command line (`--url`): `login` authorizes
//! and keeps the tokens, `logout` forgets them, and every other command
//! uses the tokens kept (and authorizes when a server asks, if someone is
//! at the terminal). The authorization URL is printed on stderr (and
//! opened with `$BROWSER` when it is set); the authorization server sends
//! the browser back to a loopback port this process listens on
//! (`http://127.0.0.1:PORT/callback`, RFC 8252 section 7.3: any port).
//! Tokens are kept in `$XDG_CONFIG_HOME/mcp-stdio/oauth/` (else
//! `~/.config/...`), one file per server URL, readable by the owner only
//! (`0600`, in a `0700` directory).

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_stdio::{OAuth, TokenStore, Tokens};

use crate::stderr::Stderr;

/// How long `login` waits for the browser to come back.
const WAIT_FOR_BROWSER: Duration = Duration::from_secs(300);

/// The directory the token files are in.
pub(crate) fn token_dir() -> Option<PathBuf> {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")))?;
    Some(config.join("mcp-stdio").join("oauth"))
}

/// The file that keeps `url`'s tokens: the URL itself, every byte but
/// letters, digits, `.` and `-` written `_XX`, so two URLs never share one.
pub(crate) fn token_file(url: &str) -> Option<PathBuf> {
    let mut name = String::new();
    for byte in url.bytes() {
        if byte.is_ascii_alphanumeric() || byte == b'.' || byte == b'-' {
            name.push(char::from(byte));
        } else {
            name.push_str(&format!("_{byte:02X}"));
        }
    }
    Some(token_dir()?.join(format!("{name}.json")))
}

/// A [`TokenStore`] in one file, owner-only.
pub(crate) struct FileTokenStore {
    path: PathBuf,
}

impl FileTokenStore {
    pub(crate) fn new(path: PathBuf) -> FileTokenStore {
        FileTokenStore { path }
    }

    /// Writes `tokens` to a new file beside the old (created `0600`), then
    /// puts it in the old one's place: never a moment with a half-written
    /// file or one others can read.
    fn write(&self, tokens: &Tokens) -> std::io::Result<()> {
        let dir = self.path.parent().unwrap_or(std::path::Path::new("."));
        let mut builder = fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(dir)?;
        let temporary = self
            .path
            .with_extension(format!("tmp{}", std::process::id()));
        let mut options = fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let written = options.open(&temporary).and_then(|mut file| {
            let text = serde_json::to_vec_pretty(tokens).map_err(std::io::Error::other)?;
            file.write_all(&text)?;
            file.sync_all()
        });
        match written.and_then(|()| fs::rename(&temporary, &self.path)) {
            Ok(()) => Ok(()),
            Err(e) => {
                let _ = fs::remove_file(&temporary);
                Err(e)
            }
        }
    }
}

impl TokenStore for FileTokenStore {
    fn load(&self) -> Option<Tokens> {
        let text = fs::read(&self.path).ok()?;
        serde_json::from_slice(&text).ok()
    }

    fn save(&self, tokens: Option<&Tokens>) {
        // A store that cannot write loses the tokens at the end of the
        // run, nothing else: the next run authorizes again.
        let _ = match tokens {
            Some(tokens) => self.write(tokens),
            None => fs::remove_file(&self.path),
        };
    }
}

/// The OAuth of a command on `url`: the tokens kept in its file; a person
/// asked to authorize in a browser when `interactive`, else a refusal that
/// says to run `login`. `None` when there is nowhere to keep tokens, or
/// no loopback port to listen on.
pub(crate) fn oauth(url: &str, interactive: bool, stderr: &Arc<Stderr>) -> Option<OAuth> {
    let store = FileTokenStore::new(token_file(url)?);
    let listener = TcpListener::bind("127.0.0.1:0").ok()?;
    let redirect = format!(
        "http://127.0.0.1:{}/callback",
        listener.local_addr().ok()?.port()
    );
    let (stderr, url) = (Arc::clone(stderr), url.to_owned());
    let listener = Mutex::new(listener);
    let authorize = move |authorization: &str| {
        if !interactive {
            return Err(format!(
                "the server asks for authorization, and no one is at the terminal: run mcp-stdio --url {url} login"
            ));
        }
        stderr.note(&format!(
            "{url} asks for authorization: open this address in a browser (waiting up to 5 minutes):\n{authorization}"
        ));
        open_browser(authorization);
        let listener = listener
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        wait_for_redirect(&listener)
    };
    Some(
        OAuth::authorization_code(&redirect, authorize)
            .client_name("mcp-stdio")
            .token_store(store),
    )
}

/// Opens `url` with `$BROWSER` (a program and its arguments, split on
/// spaces), if it is set; else the person opens it.
fn open_browser(url: &str) {
    let Ok(browser) = std::env::var("BROWSER") else {
        return;
    };
    let mut words = browser.split_whitespace();
    if let Some(program) = words.next() {
        let _ = std::process::Command::new(program)
            .args(words)
            .arg(url)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
    }
}

/// Waits for the browser's request for `/callback` on `listener` (at
/// most [`WAIT_FOR_BROWSER`]) and answers it; the URL it asked for.
fn wait_for_redirect(listener: &TcpListener) -> Result<String, String> {
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let listener = listener.try_clone().map_err(|e| e.to_string())?;
    let (tx, rx) = crossbeam_channel::bounded(1);
    // Accepting blocks: on a thread of its own, given up at the deadline
    // (the process ends soon after; the thread with it).
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
            let mut line = String::new();
            let _ = BufReader::new(&conn).take(8 * 1024).read_line(&mut line);
            let target = line.split(' ').nth(1).unwrap_or("").to_owned();
            let callback = target.starts_with("/callback");
            let (status, text) = match callback {
                true => (
                    "200 OK",
                    "mcp-stdio: authorization received; you can close this window.",
                ),
                false => ("404 Not Found", "not here"),
            };
            let _ = write!(
                &conn,
                "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                text.len()
            );
            if callback {
                let _ = tx.send(target);
                return;
            }
        }
    });
    match rx.recv_timeout(WAIT_FOR_BROWSER) {
        Ok(target) => Ok(format!("http://127.0.0.1:{port}{target}")),
        Err(_) => Err("no browser came back within 5 minutes".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_files_are_one_per_url_and_owner_only() {
        let dir = std::env::temp_dir().join(format!("mcp-stdio-login-{}", std::process::id()));
        let a = dir.join("sub").join("a.json");
        let store = FileTokenStore::new(a.clone());
        assert_eq!(store.load(), None);
        let tokens = Tokens {
            access_token: "t".into(),
            ..Tokens::default()
        };
        store.save(Some(&tokens));
        assert_eq!(store.load(), Some(tokens));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &std::path::Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&a), 0o600);
            assert_eq!(mode(a.parent().unwrap()), 0o700);
        }
        store.save(None);
        assert!(!a.exists());
        let _ = fs::remove_dir_all(&dir);
        let (x, y) = (token_file("http://h/a_b"), token_file("http://h/a/b"));
        assert_ne!(x, y);
        assert!(
            x.unwrap()
                .to_string_lossy()
                .ends_with("http_3A_2F_2Fh_2Fa_5Fb.json")
        );
    }
}

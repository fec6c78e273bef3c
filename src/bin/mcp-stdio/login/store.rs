//! The tokens of one server kept in one file, owner-only
//! ([`FileTokenStore`]): written whole to a temporary of its own, then
//! renamed into place.

use std::fs;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mcp_stdio::{TokenStore, Tokens};

use super::lock;

/// A [`TokenStore`] in one file, owner-only.
pub(crate) struct FileTokenStore {
    path: PathBuf,
}

impl FileTokenStore {
    pub(crate) fn new(path: PathBuf) -> FileTokenStore {
        FileTokenStore { path }
    }

    /// Writes `tokens` to a new file beside the old (created `0600`, under
    /// a name of its own: [`temporary_name`]), then puts it in the old
    /// one's place: never a moment with a half-written file or one others
    /// can read.
    fn write(&self, tokens: &Tokens) -> std::io::Result<()> {
        let dir = self.path.parent().unwrap_or(std::path::Path::new("."));
        let mut builder = fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(dir)?;
        // One found there, made by something else, open to others: made
        // the owner's (they could list the servers logged in to, or, with
        // write access, put a file or a link in the tokens' place). When
        // it is not ours to change, nothing is written there.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            if fs::metadata(dir)?.permissions().mode() & 0o077 != 0 {
                fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
            }
        }
        // Saves in this process take turns: the file is the last saved.
        static WRITING: Mutex<()> = Mutex::new(());
        let _writing = lock(&WRITING);
        remove_stale_temporaries(&self.path);
        // A name no other write has, in this process or another: two
        // processes may have one process id (containers sharing this
        // directory, the command pid 1 in each), and one removing or
        // writing over the other's temporary would lose its save or put a
        // half-written file in place. (`create_new`: a file or link found
        // under it anyway is never written through, and another name is
        // tried.)
        let mut options = fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut tries = 0;
        let (temporary, mut file) = loop {
            let temporary = temporary_name(&self.path);
            match options.open(&temporary) {
                Ok(file) => break (temporary, file),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 8 => {
                    tries += 1;
                }
                Err(e) => return Err(e),
            }
        };
        let written = (|| {
            let text = serde_json::to_vec_pretty(tokens).map_err(std::io::Error::other)?;
            file.write_all(&text)?;
            file.sync_all()
        })();
        match written.and_then(|()| fs::rename(&temporary, &self.path)) {
            Ok(()) => Ok(()),
            Err(e) => {
                let _ = fs::remove_file(&temporary);
                Err(e)
            }
        }
    }
}

/// How old a temporary token file is before a save takes it for a dead
/// run's and removes it: a write takes milliseconds, and a younger one
/// may be another process's, halfway through.
const STALE_TEMPORARY: Duration = Duration::from_secs(600);

/// A temporary name beside `path` for one write: `NAME.tmpPID-N-RANDOM`,
/// this process's id, a count of its writes and 64 random bits (the
/// time's nanoseconds where there are none), so no other write has it,
/// whatever its process id.
fn temporary_name(path: &std::path::Path) -> PathBuf {
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let count = WRITES.fetch_add(1, Ordering::Relaxed);
    let random = getrandom::u64().unwrap_or_else(|_| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |t| t.as_nanos() as u64)
    });
    path.with_extension(format!("tmp{}-{count}-{random:016x}", std::process::id()))
}

/// Removes the temporaries of `path` a run that died between their
/// creation and their rename left (killed, the machine down): those
/// older than [`STALE_TEMPORARY`], whatever process id made them (one
/// with this run's id is no more this run's than any other). A younger
/// one is left: it may be another process's write, under way. A link is
/// removed, never followed.
fn remove_stale_temporaries(path: &std::path::Path) {
    let (Some(dir), Some(prefix)) = (
        path.parent(),
        path.with_extension("tmp").file_name().map(|n| n.to_owned()),
    ) else {
        return;
    };
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name
            .as_encoded_bytes()
            .starts_with(prefix.as_encoded_bytes())
        {
            continue;
        }
        // `DirEntry::metadata` does not follow a link.
        let stale = (entry.metadata().and_then(|m| m.modified()).ok())
            .and_then(|modified| modified.elapsed().ok())
            .is_some_and(|age| age >= STALE_TEMPORARY);
        if stale {
            let _ = fs::remove_file(entry.path());
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

/// Whether the file at `path` keeps an access token: a registration is
/// kept before its authorization ends (`Tokens` with an empty
/// `access_token`), and an authorization never finished is no login.
pub(crate) fn holds_a_token(path: &std::path::Path) -> bool {
    FileTokenStore::new(path.to_owned())
        .load()
        .is_some_and(|tokens| !tokens.access_token.is_empty())
}

//! `--save DIR`: the images, audio and blobs of a result written to files
//! named after the item (`NAME-N.EXT`, the first `N` no file has yet), and
//! base64 decoded by hand (no crate for forty lines).

use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where `--save DIR` writes binary content, and how files are named: the
/// item's name and the first number no file has yet (a second run writes
/// `-2`, never over `-1`).
#[derive(Debug)]
pub struct Saver {
    dir: Option<PathBuf>,
    /// The start of every file name: the tool, prompt or resource.
    stem: String,
    count: usize,
    /// The files written.
    saved: Vec<PathBuf>,
    /// The first file that could not be written: the command fails with
    /// it once its output is printed.
    error: Option<String>,
}

/// How much of an item's name starts a file name.
const MAX_STEM: usize = 100;

/// How many numbers a file name tries before `--save` gives up: a
/// directory with that many files of one item is a mistake.
const MAX_SAVED: usize = 10_000;

impl Saver {
    /// A saver into `dir`, which is made if it is missing: a `dir` that
    /// cannot be is an error, before anything is asked of the server.
    pub fn new(dir: Option<&Path>, stem: &str) -> Result<Saver, String> {
        if let Some(dir) = dir {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot save to {}: {e} (--save DIR)", dir.display()))?;
        }
        // Cut: a file name holds 255 bytes at most, and a tool's name has
        // no bound.
        let stem: String = stem
            .chars()
            .take(MAX_STEM)
            .map(|c| {
                if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        Ok(Saver {
            dir: dir.map(Path::to_path_buf),
            stem,
            count: 0,
            saved: Vec::new(),
            error: None,
        })
    }

    /// Why a file could not be written, if one could not.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// The files written, in order.
    pub fn saved(&self) -> &[PathBuf] {
        &self.saved
    }

    /// Writes `bytes` to the first `STEM-N.EXT` that does not exist: its
    /// path; or why not, with the path it failed on.
    fn save(
        &mut self,
        dir: &Path,
        bytes: &[u8],
        extension: &str,
    ) -> Result<PathBuf, (PathBuf, std::io::Error)> {
        loop {
            self.count += 1;
            let path = dir.join(format!("{}-{}.{extension}", self.stem, self.count));
            // `create_new`: a file that exists is never written over.
            let file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path);
            match file {
                Ok(mut file) => {
                    return match file.write_all(bytes) {
                        Ok(()) => Ok(path),
                        Err(e) => Err((path, e)),
                    };
                }
                Err(e)
                    if e.kind() == std::io::ErrorKind::AlreadyExists && self.count < MAX_SAVED => {}
                Err(e) => return Err((path, e)),
            }
        }
    }

    /// `image/png, 68 bytes`, and `→ DIR/FILE` when saved.
    pub(crate) fn describe(&mut self, base64: &str, mime: Option<&str>) -> String {
        let mime = mime.unwrap_or("application/octet-stream");
        let Some(bytes) = decode_base64(base64) else {
            return format!("{mime}, not valid base64");
        };
        let mut text = format!("{mime}, {} bytes", bytes.len());
        if let Some(dir) = self.dir.clone() {
            match self.save(&dir, &bytes, extension(mime)) {
                Ok(path) => {
                    let _ = write!(text, " → {}", path.display());
                    self.saved.push(path);
                }
                // The file's path, not the directory's: the name may be
                // what failed (too long, a name the file system refuses).
                Err((path, e)) if self.error.is_none() => {
                    self.error = Some(format!("cannot save {}: {e}", path.display()));
                }
                Err(_) => {}
            }
        }
        text
    }
}

/// A file extension for a MIME type.
fn extension(mime: &str) -> &str {
    match mime {
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        "audio/wav" | "audio/x-wav" => "wav",
        "audio/mpeg" => "mp3",
        "audio/ogg" => "ogg",
        "application/pdf" => "pdf",
        "application/json" => "json",
        "text/plain" => "txt",
        _ => "bin",
    }
}

/// Standard base64 (RFC 4648, with or without padding; whitespace
/// skipped); `None` if it is not base64.
pub fn decode_base64(text: &str) -> Option<Vec<u8>> {
    fn value(c: u8) -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        } as u32)
    }
    let digits: Vec<u8> = text.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
    let digits = match digits.iter().position(|&c| c == b'=') {
        Some(at) if digits[at..].iter().all(|&c| c == b'=') && digits[at..].len() <= 2 => {
            &digits[..at]
        }
        Some(_) => return None,
        None => &digits[..],
    };
    if digits.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= value(c)? << (18 - 6 * i);
        }
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::content;
    use mcp_stdio::types::ContentBlock;

    #[test]
    fn base64_decodes() {
        assert_eq!(decode_base64("aGk=").unwrap(), b"hi");
        assert_eq!(decode_base64("aGk").unwrap(), b"hi");
        assert_eq!(decode_base64("aGVsbG8gd29ybGQ=").unwrap(), b"hello world");
        assert_eq!(decode_base64("").unwrap(), b"");
        assert_eq!(decode_base64("YQ==").unwrap(), b"a");
        assert!(decode_base64("a").is_none());
        assert!(decode_base64("a*bc").is_none());
        assert!(decode_base64("YQ==YQ==").is_none());
    }

    #[test]
    fn saved_files_are_named_after_the_item() {
        let dir = std::env::temp_dir().join(format!("mcp-stdio-cli-save-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut saver = Saver::new(Some(&dir), "test image").unwrap();
        let text = content(&ContentBlock::image("aGk=", "image/png"), &mut saver);
        let path = dir.join("test_image-1.png");
        assert_eq!(
            text,
            format!("[image image/png, 2 bytes → {}]", path.display())
        );
        assert_eq!(std::fs::read(&path).unwrap(), b"hi");
        // A second saver (a second run) takes the next free name.
        let mut again = Saver::new(Some(&dir), "test image").unwrap();
        let text = content(&ContentBlock::image("aGk=", "image/png"), &mut again);
        assert!(text.ends_with("test_image-2.png]"), "{text}");
        // A name past what a file name holds is cut (it failed with
        // ENAMETOOLONG, blamed on the directory).
        let mut long = Saver::new(Some(&dir), &"n".repeat(300)).unwrap();
        let text = content(&ContentBlock::image("aGk=", "image/png"), &mut long);
        assert_eq!(long.error(), None);
        assert!(
            text.ends_with(&format!("{}-1.png]", "n".repeat(100))),
            "{text}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

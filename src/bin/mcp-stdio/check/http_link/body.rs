use std::io::{BufRead, BufReader, Read};

use super::{Body, Framing, Timed};

impl Body {
    pub(super) fn new(status: u16, headers: &[(String, String)], reader: BufReader<Timed>) -> Body {
        let get = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        };
        let framing = if status == 204 || status == 304 || (100..200).contains(&status) {
            Framing::Length(0)
        } else if get("transfer-encoding")
            .is_some_and(|t| t.to_ascii_lowercase().contains("chunked"))
        {
            Framing::Chunked {
                left: 0,
                done: false,
            }
        } else if let Some(n) = get("content-length").and_then(|n| n.parse().ok()) {
            Framing::Length(n)
        } else {
            Framing::Close
        };
        Body { reader, framing }
    }
}

impl Read for Body {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match &mut self.framing {
            Framing::Length(0) => Ok(0),
            Framing::Length(left) => {
                let n = buf.len().min(*left);
                let n = self.reader.read(&mut buf[..n])?;
                *left = if n == 0 { 0 } else { *left - n };
                Ok(n)
            }
            Framing::Close => self.reader.read(buf),
            Framing::Chunked { left, done } => {
                if *done {
                    return Ok(0);
                }
                if *left == 0 {
                    let mut size = String::new();
                    (&mut self.reader).take(1024).read_line(&mut size)?;
                    if size.trim().is_empty() {
                        // The CRLF after a chunk's data.
                        size.clear();
                        (&mut self.reader).take(1024).read_line(&mut size)?;
                    }
                    let hex = size.trim().split(';').next().unwrap_or("");
                    let n = usize::from_str_radix(hex, 16).map_err(|_| {
                        std::io::Error::new(
                            std::io::ErrorKind::InvalidData,
                            format!("bad chunk size {hex:?}"),
                        )
                    })?;
                    if n == 0 {
                        *done = true;
                        return Ok(0);
                    }
                    *left = n;
                }
                let n = buf.len().min(*left);
                let n = self.reader.read(&mut buf[..n])?;
                if n == 0 {
                    *done = true;
                }
                *left -= n;
                Ok(n)
            }
        }
    }
}

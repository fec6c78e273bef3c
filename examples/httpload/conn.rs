//! One keep-alive HTTP/1.1 connection to an MCP endpoint: POSTs a
//! 2026-07-28 `tools/call` of `echo` and reads its JSON answer
//! (`Content-Length` or chunked), checking the id and the echoed text.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// Where to POST: `host:port` and the path, from `http://host:port/path`.
#[derive(Clone, Debug)]
pub struct Endpoint {
    pub authority: String,
    pub path: String,
}

impl Endpoint {
    /// Parses `http://host:port/path` (plain HTTP only).
    pub fn parse(url: &str) -> Result<Endpoint, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("{url}: only http:// URLs are supported"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        Ok(Endpoint {
            authority: authority.to_owned(),
            path: path.to_owned(),
        })
    }
}

/// A connection that stays open across calls.
pub struct Conn {
    endpoint: Endpoint,
    writer: TcpStream,
    reader: BufReader<TcpStream>,
    request: Vec<u8>,
}

impl Conn {
    /// Connects, with `TCP_NODELAY` (one request is one write).
    pub fn open(endpoint: &Endpoint) -> Result<Conn, String> {
        let stream = TcpStream::connect(&endpoint.authority)
            .map_err(|e| format!("connect {}: {e}", endpoint.authority))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .map_err(|e| e.to_string())?;
        let reader =
            BufReader::with_capacity(64 * 1024, stream.try_clone().map_err(|e| e.to_string())?);
        Ok(Conn {
            endpoint: endpoint.clone(),
            writer: stream,
            reader,
            request: Vec::with_capacity(1024),
        })
    }

    /// One `tools/call echo {text}` with request id `id`; fails on anything
    /// but a 200 JSON answer carrying that id and that text.
    pub fn call(&mut self, id: u64, text: &str) -> Result<(), String> {
        let body = format!(
            concat!(
                r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"_meta":{{"#,
                r#""io.modelcontextprotocol/protocolVersion":"2026-07-28","#,
                r#""io.modelcontextprotocol/clientCapabilities":{{}}}},"#,
                r#""name":"echo","arguments":{{"text":"{}"}}}}}}"#
            ),
            id, text
        );
        self.request.clear();
        write!(
            self.request,
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
             Mcp-Method: tools/call\r\nMcp-Name: echo\r\nContent-Length: {}\r\n\r\n{}",
            self.endpoint.path,
            self.endpoint.authority,
            body.len(),
            body
        )
        .map_err(|e| e.to_string())?;
        self.writer
            .write_all(&self.request)
            .map_err(|e| format!("write: {e}"))?;
        let answer = self.read_response()?;
        let id_field = format!("\"id\":{id},");
        if !answer.contains(&id_field) || !answer.contains(&format!("\"text\":\"{text}\"")) {
            return Err(format!("wrong answer to call {id}: {}", excerpt(&answer)));
        }
        Ok(())
    }

    /// The body of the next response, which must be `200` JSON.
    fn read_response(&mut self) -> Result<String, String> {
        let mut line = String::new();
        self.read_line(&mut line)?;
        let status = line.split_whitespace().nth(1).unwrap_or("").to_owned();
        let (mut length, mut chunked, mut json) = (None, false, false);
        loop {
            line.clear();
            self.read_line(&mut line)?;
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            let Some((name, value)) = header.split_once(':') else {
                return Err(format!("bad header line {header:?}"));
            };
            let value = value.trim();
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.parse::<usize>().ok(),
                "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
                "content-type" => json = value.starts_with("application/json"),
                _ => {}
            }
        }
        let body = match (length, chunked) {
            (Some(n), _) => {
                let mut body = vec![0; n];
                self.reader
                    .read_exact(&mut body)
                    .map_err(|e| format!("body: {e}"))?;
                body
            }
            (None, true) => self.read_chunked()?,
            (None, false) => {
                return Err(format!(
                    "status {status}: no Content-Length and not chunked"
                ));
            }
        };
        let body = String::from_utf8(body).map_err(|_| "a body that is not UTF-8".to_owned())?;
        if status != "200" || !json {
            return Err(format!(
                "status {status} (JSON: {json}): {}",
                excerpt(&body)
            ));
        }
        Ok(body)
    }

    fn read_chunked(&mut self) -> Result<Vec<u8>, String> {
        let mut body = Vec::new();
        let mut line = String::new();
        loop {
            line.clear();
            self.read_line(&mut line)?;
            let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                .map_err(|_| format!("bad chunk size {line:?}"))?;
            let start = body.len();
            body.resize(start + size, 0);
            self.reader
                .read_exact(&mut body[start..])
                .map_err(|e| format!("chunk: {e}"))?;
            line.clear();
            self.read_line(&mut line)?; // the CRLF after the chunk (or the end of trailers)
            if size == 0 {
                return Ok(body);
            }
        }
    }

    fn read_line(&mut self, line: &mut String) -> Result<(), String> {
        match self.reader.read_line(line) {
            Ok(0) => Err("the server closed the connection".into()),
            Ok(_) => Ok(()),
            Err(e) => Err(format!("read: {e}")),
        }
    }
}

fn excerpt(text: &str) -> String {
    text.chars().take(200).collect()
}

//! The owner's output: one message per line, into an 8 KiB buffer that is
//! flushed when the inbox is empty. Only the owner writes; after a failed
//! write nothing more is written, and the error ends the connection.

use std::io::{self, Write};

use super::Owner;
use crate::jsonrpc::{ErrorObject, RequestId, encode_error};
use crate::server::reply::Reply;

impl Owner {
    /// Writes an error response.
    pub(super) fn write_error_line(&mut self, id: Option<&RequestId>, error: &ErrorObject) {
        let mut line = Vec::with_capacity(128);
        encode_error(&mut line, id, error);
        self.write(&line);
    }

    /// Writes one encoded message.
    pub(super) fn write(&mut self, line: &[u8]) {
        self.write_line(|out| out.write_all(line));
    }

    /// Writes a reply, encoded straight into the output.
    pub(super) fn write_reply(&mut self, reply: Reply) {
        self.write_line(|out| reply.write_to(out));
    }

    /// Writes one message with `body`, then its newline. After a failed
    /// write nothing more is written.
    fn write_line(&mut self, body: impl FnOnce(&mut dyn Write) -> io::Result<()>) {
        if self.write_error.is_some() {
            return;
        }
        let res = body(&mut self.out).and_then(|()| self.out.write_all(b"\n"));
        if let Err(e) = res {
            self.write_error = Some(e);
        }
    }

    /// Flushes the output buffer (once per burst of messages).
    pub(super) fn flush(&mut self) {
        if self.write_error.is_none()
            && let Err(e) = self.out.flush()
        {
            self.write_error = Some(e);
        }
    }
}

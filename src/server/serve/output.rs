//! The owner's writes: one message per line, into the shared output's
//! 8 KiB buffer, flushed when the inbox is empty. After a failed write
//! nothing more is written, and the error ends the connection.

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
        self.output.lock().write_line(body);
    }

    /// Flushes the output buffer (once per burst of messages).
    pub(super) fn flush(&mut self) {
        self.output.lock().flush();
    }
}

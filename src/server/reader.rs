//! The reader thread: the only code that touches the input. It reads one
//! line at a time (never more than the maximum line length in memory),
//! classifies it, and sends it to the owner's inbox, taking a credit first
//! so that it stops reading once `queue_limit` lines are in hand.

use std::io;

use crossbeam_channel::Sender;

use crate::incoming::{Incoming, classify};
use crate::jsonrpc::ErrorObject;
use crate::server::serve::Event;
use crate::transport::{Line, read_line};

/// The reader thread: one classified line at a time into the inbox.
pub(crate) fn read_loop(
    mut reader: Box<dyn io::BufRead + Send>,
    inbox: Sender<Event>,
    credits: Sender<()>,
    max_line: usize,
    trace: &(dyn Fn(&str) + Send + Sync),
) {
    let mut buf = Vec::new();
    loop {
        // Blocks while `queue_limit` lines are in hand: that is the
        // backpressure. An error means the owner is gone.
        if credits.send(()).is_err() {
            return;
        }
        let event = match read_line(&mut *reader, &mut buf, max_line) {
            Ok(Line::Message) => Event::Line(classify(&buf)),
            Ok(Line::TooLong(len)) => Event::Line(Incoming::Invalid {
                id: None,
                error: ErrorObject::invalid_request(format!(
                    "message of {len} bytes exceeds the maximum line length of {max_line} bytes"
                )),
            }),
            Ok(Line::Eof) => Event::Eof,
            Err(e) => {
                trace(&format!("reading input failed: {e}"));
                Event::Eof
            }
        };
        let eof = matches!(event, Event::Eof);
        if inbox.send(event).is_err() || eof {
            return;
        }
        if buf.capacity() > 64 * 1024 {
            // Do not keep a once-large buffer for the life of the connection.
            buf = Vec::new();
        }
    }
}

use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;

use super::{Exchange, WATCH, Watched};
use crate::jsonrpc::RequestId;
use crate::server::conn::End;
use crate::server::conn::handle::{ConnHandle, Sending};
use crate::server::http::body::Body;
use crate::server::http::open::peer_gone;

impl Exchange<'_> {
    /// Waits for the response to be complete (woken by it, so a client
    /// that reads to the connection's close gets it at once), looking at
    /// the socket every [`WATCH`]: a close cancels request `id` (spec
    /// 2026-07-28), unless the request outlives its client (a legacy one,
    /// `Body::outlive_client`), which then runs to its end with nothing
    /// more written, until its connection gives way at the cap to a new
    /// one (`open`: a client gone holds no place): then this returns
    /// [`Watched::GaveWay`], and the caller cancels it. A stream that
    /// answers no request (`id` is `None`, see `stream`) ends at a stop,
    /// with no grace period. A look a signal interrupted is no news of the
    /// client (a process stopped and continued gets `EINTR`); a request
    /// given up on an error shuts its socket down, so that no client waits
    /// on a stream left open without its end. A stream whose token expired
    /// (`Body::end_at`) is cut: nothing more is written, request `id` is
    /// cancelled (a listen leaves its subscriptions), and the socket's
    /// sending side is shut, so the client reads the end at once
    /// ([`Watched::Expired`]).
    pub(in crate::server::http) fn watch(
        &self,
        conn: &ConnHandle,
        body: &Body,
        end: &Receiver<End>,
        id: Option<&RequestId>,
    ) -> Watched {
        let mut next_comment = crate::deadline::from_now(self.options.keep_alive_interval);
        let mut grace_until: Option<Instant> = None;
        let mut peek = [0u8; 1];
        let mut client_gone = false;
        // From here on a client that went away leaves its place at the cap
        // (`open`), not while an inline handler ran on this thread.
        self.open.watching(self.key);
        while !body.wait_done(WATCH) {
            match end.try_recv() {
                Ok(End::Stop) if id.is_none() => return Watched::Over,
                Ok(End::Stop) if grace_until.is_none() => {
                    // What the stop wrote (a listen's final result) is
                    // this thread's to send (`Sending::AtShutdown`).
                    conn.send_deferred();
                    grace_until = Some(crate::deadline::from_now(self.inner.config.shutdown_grace));
                }
                Ok(End::OutputFailed) => break,
                _ => {}
            }
            let now = Instant::now();
            if grace_until.is_some_and(|at| now >= at) {
                // `ConnHandle::shut_down` (by the caller) answers it `-32603`.
                return Watched::Over;
            }
            if body.expired() {
                body.cancel();
                if let Some(id) = id {
                    conn.act(Sending::Now, |c| c.cancel(id));
                }
                let _ = self.socket.shutdown(std::net::Shutdown::Write);
                return Watched::Expired;
            }
            if client_gone {
                if self.open.gave_way(self.key) {
                    return Watched::GaveWay;
                }
                continue;
            }
            if now >= next_comment {
                body.keep_alive();
                next_comment = crate::deadline::after(now, self.options.keep_alive_interval);
            }
            // A short look (the body's writer shares the socket, so it
            // stays blocking): a read timeout of 1 µs, which the kernel
            // rounds up to a clock tick (4-16 ms here). Only a response
            // that takes longer than `WATCH` can complete during one.
            let _ = self.socket.set_read_timeout(Some(Duration::from_micros(1)));
            let looked = match self.socket.peek(&mut peek) {
                // Bytes after the request (the next one, pipelined, or
                // anything): a peek sees them, not a close behind them,
                // which `peer_gone` does (a client that sent one byte
                // more and left would otherwise keep its request running).
                Ok(1..) if peer_gone(self.socket) => Ok(0),
                looked => looked,
            };
            match looked {
                Ok(0) if id.is_some() && body.outlives_client() => {
                    // A legacy request goes on; nothing more is written.
                    body.detach();
                    client_gone = true;
                }
                Ok(0) => {
                    // The client closed the stream: the request is
                    // cancelled, and nothing more is written for it.
                    body.cancel();
                    if let Some(id) = id {
                        conn.act(Sending::Now, |c| c.cancel(id));
                    }
                    return Watched::Over;
                }
                // The next request arrived early (pipelining): the wait
                // for the response goes on.
                Ok(_) => {}
                // Nothing yet; or a signal: a read with a timeout is not
                // restarted after one, and a process stopped (SIGSTOP) and
                // continued gets `EINTR` here (signal(7)). The client is
                // still there: a listen taken for gone then was cancelled,
                // its stream left open without an end (issue 48).
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock
                            | std::io::ErrorKind::TimedOut
                            | std::io::ErrorKind::Interrupted
                    ) => {}
                Err(_) if id.is_some() && body.outlives_client() => {
                    body.detach();
                    client_gone = true;
                }
                Err(_) => {
                    body.cancel();
                    if let Some(id) = id {
                        conn.act(Sending::Now, |c| c.cancel(id));
                    }
                    // Taken for gone, so the stream ends: never left open
                    // without its end, for a client that may still read.
                    let _ = self.socket.shutdown(std::net::Shutdown::Both);
                    return Watched::Over;
                }
            }
        }
        Watched::Over
    }
}

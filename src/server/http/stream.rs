//! A legacy session's GET stream (2025-11-25 basic/transports, "Listening
//! for Messages from the Server"): `GET` with the session's
//! `Mcp-Session-Id` opens an event stream on which the server sends the
//! session's notifications outside any request: its list changes and the
//! updates of the resources it subscribed to (see `sessions`). The stream
//! is a connection of its own (a `ConnHandle` writing to a `body::Body`
//! that is an event stream from the start, to which the sessions' listener
//! writes the session's notifications), with nothing in flight. It ends when the client closes it, opens another, the session
//! is deleted, the server stops, a write fails (the write timeout), or the
//! token it was opened with expires (`Watched::Expired`: cut, and the
//! connection closed, so that the client opens it again with a fresh token
//! or is answered `401`).

use super::exchange::{Exchange, Watched};
use crate::http::HttpRequest;
use crate::jsonrpc::ErrorObject;
use crate::server::conn::Writer;
use crate::server::conn::handle::ConnHandle;

impl Exchange<'_> {
    /// Serves a GET of session `request`'s `Mcp-Session-Id` as its stream
    /// until it ends (a stream the session had ends: see
    /// `Sessions::open_stream`). `406` when the client does not take an
    /// event stream, `404` for a session not known. Returns whether the
    /// connection may carry another request: a stream the server ended
    /// (a `DELETE`, a newer stream) ends with its last chunk, and an HTTP
    /// client may send its next request on the same connection.
    pub fn stream(&self, request: &HttpRequest) -> bool {
        let headers = &request.headers;
        let keep_alive = request.keep_alive();
        let id = headers.get("mcp-session-id").unwrap_or_default();
        if !(headers.lists("accept", "text/event-stream") || headers.lists("accept", "*/*")) {
            let error = ErrorObject::invalid_request(
                "a GET stream is an event stream: list text/event-stream in Accept",
            );
            return self.error_with(406, None, &error, &[], keep_alive);
        }
        let Ok(socket) = self.socket.try_clone() else {
            let error = ErrorObject::internal_error(
                "the server is out of file descriptors: retry in a moment",
            );
            return self.error_with(503, None, &error, &[("Retry-After", "1")], false);
        };
        let body = self.body(socket, true, request);
        if let Some(at) = self
            .token
            .borrow()
            .as_ref()
            .and_then(|info| info.expires_at)
        {
            body.end_at(at);
        }
        let (end_tx, end) = crossbeam_channel::unbounded();
        let conn = ConnHandle::new(self.inner, Writer::Lines(Box::new(body.clone())), end_tx);
        let key = match (self.sessions).open_stream((id, self.owner().as_ref()), &conn, &body) {
            Ok(key) => key,
            Err(unknown) => {
                return self.error_with(404, None, &unknown.error(), &[], keep_alive);
            }
        };
        let connected = self.inner.connections.connect(conn.as_connection());
        // The response's head, and a comment: the client sees the stream
        // open before anything is published.
        body.keep_alive();
        let watched = self.watch(&conn, &body, &end, None);
        self.sessions.close_stream(id, key);
        self.inner.connections.disconnect(connected);
        let _ = conn.shut_down(false);
        body.end_unanswered();
        body.complete() && keep_alive && watched != Watched::Expired
    }
}

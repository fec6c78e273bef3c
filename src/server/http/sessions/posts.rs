use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{ASKS, CHANGES_SESSION, Entered, OpenPost, Sessions, UnknownSession, new_id};
use crate::http::HttpRequest;
use crate::incoming::Reply;
use crate::jsonrpc::RequestId;
use crate::server::conn::handle::ConnHandle;
use crate::server::http::body::Body;
use crate::server::legacy::Front;
use crate::server::legacy::session::LegacySession;
use crate::server::request_meta::{Owner, TokenInfo};

impl Sessions {
    /// Gives `front` (the POST's legacy front end) the session a legacy
    /// POST of request `id` runs under (with `token`, what its validated
    /// token allows: a session is found only by whom it stood for, and the
    /// POST carries the session's notifications only until it expires);
    /// an `initialize` gets a new id (sent back with `body`'s headers, and
    /// its answer held until [`Sessions::opened`] stored the session), and
    /// so does the answer of a method that changes the session.
    pub fn enter(
        &self,
        (front, conn): (&Front, &ConnHandle),
        body: &Body,
        request: &HttpRequest,
        (id, method): (&RequestId, &str),
        version: &str,
        token: Option<&TokenInfo>,
    ) -> Result<Entered, UnknownSession> {
        let owner = token.and_then(TokenInfo::owner);
        if method == "initialize" {
            // Its id goes out with its answer only if the session opens
            // (`Sessions::opened`): a failed `initialize` names none.
            let session_id = new_id();
            body.hold();
            return Ok(Entered {
                id: Some(session_id),
                owner,
                key: None,
                given: None,
                post: None,
            });
        }
        let Some(session_id) = request.headers.get("mcp-session-id") else {
            let session = Arc::new(LegacySession {
                version: version.to_owned(),
                client_capabilities: Arc::default(),
                client_info: None,
                initialized: false,
                log_level: None,
                live_level: Default::default(),
                subscribed: Arc::default(),
            });
            front.set_session(session);
            return Ok(Entered {
                id: None,
                owner: None,
                key: None,
                given: None,
                post: None,
            });
        };
        let mut store = self.lock();
        let kept = store.kept(session_id, owner.as_ref())?;
        // A `ping` keeps a session seen, not live (`Kept::used`).
        kept.seen(method != "ping");
        let mut session = Arc::clone(&kept.session);
        if CHANGES_SESSION.contains(&method) {
            // Its answer waits until the change is stored (`opened`): the
            // client's next POST, sent on that answer, must see it.
            body.hold();
        }
        if !body.streams()
            && ASKS
                .iter()
                .any(|c| session.client_capabilities.contains_key(*c))
        {
            let mut without = (*session).clone();
            let capabilities = Arc::make_mut(&mut without.client_capabilities);
            for asked in ASKS {
                capabilities.remove(asked);
            }
            session = Arc::new(without);
        }
        let key = store.next_key;
        store.next_key += 1;
        let post = OpenPost {
            key,
            request: id.clone(),
            front: front.clone(),
            conn: conn.clone(),
            body: body.clone(),
            cancelled: Arc::default(),
            expires_at: token.and_then(|info| info.expires_at),
        };
        (store.open.entry(session_id.to_owned()).or_default()).push(post.clone());
        drop(store);
        body.header("Mcp-Session-Id", session_id.to_owned());
        front.set_session(Arc::clone(&session));
        Ok(Entered {
            id: Some(session_id.to_owned()),
            owner: None,
            key: Some(key),
            given: Some(session),
            post: Some(post),
        })
    }

    /// After the POST's request was dispatched: the session an
    /// `initialize` opened (an `initialize` that failed opened none), or
    /// the change a `logging/setLevel` or `resources/subscribe` made, is
    /// stored before its answer goes out, so that the client's next POST,
    /// sent on that answer, runs under it.
    ///
    /// A cancellation (a `DELETE`, `notifications/cancelled`) that came
    /// while the request was not yet in flight is made again now that it
    /// is: none is lost between finding the session and beginning the
    /// request.
    pub fn opened(&self, front: &Front, body: &Body, entered: &Entered) {
        if let Some(post) = &entered.post
            && post.cancelled.load(Ordering::Acquire)
        {
            post.cancel_in_flight();
        }
        if let Some(id) = &entered.id {
            let session = front.session();
            match (session, &entered.given) {
                (Some(session), None) => {
                    self.store(id, &session, None, entered.owner.clone());
                    body.header("Mcp-Session-Id", id.clone());
                }
                (Some(session), Some(given)) if !Arc::ptr_eq(given, &session) => {
                    self.store(id, &session, Some(given), None);
                }
                _ => {}
            }
        }
        body.release();
    }

    /// The POST is over: it leaves its session's open POSTs. What it
    /// changed in the session was stored by [`Sessions::opened`] (the
    /// methods that change one are answered while they are dispatched).
    pub fn leave(&self, entered: Entered) {
        let Some(id) = entered.id else { return };
        if let Some(key) = entered.key {
            let mut store = self.lock();
            if let Some(open) = store.open.get_mut(&id) {
                open.retain(|post| post.key != key);
                if open.is_empty() {
                    store.open.remove(&id);
                }
            }
        }
    }

    /// A client's JSON-RPC response under session `session_id`: the answer
    /// to an ask of one of its open POSTs. Returns whether it answered one.
    pub fn answer(
        &self,
        (session_id, owner): (&str, Option<&Owner>),
        id: Option<&RequestId>,
        reply: Reply,
    ) -> Result<bool, UnknownSession> {
        let open = self.open_posts(session_id, owner)?;
        let Some(id) = id else { return Ok(false) };
        let mut reply = reply;
        for post in open {
            match post.front.asks().answer(Some(id), reply) {
                Ok(()) => {
                    self.used(session_id);
                    return Ok(true);
                }
                Err(again) => reply = again,
            }
        }
        Ok(false)
    }

    /// `notifications/cancelled` under session `session_id`: the POST
    /// serving request `request` is cancelled, and its response ends
    /// without a reply.
    pub fn cancel(
        &self,
        (session_id, owner): (&str, Option<&Owner>),
        request: &RequestId,
    ) -> Result<(), UnknownSession> {
        for post in self.open_posts(session_id, owner)? {
            if post.request == *request {
                post.cancel();
                self.used(session_id);
            }
        }
        Ok(())
    }

    /// The open POSTs of a known session (a client's answer or
    /// cancellation names it). Seen, not yet live: only an answer that
    /// found its ask or a cancellation that found its request makes the
    /// session live ([`Sessions::used`]); a stray one is as cheap for a
    /// flood as a `ping`.
    fn open_posts(
        &self,
        session_id: &str,
        owner: Option<&Owner>,
    ) -> Result<Vec<OpenPost>, UnknownSession> {
        let mut store = self.lock();
        store.kept(session_id, owner)?.seen(false);
        Ok(store.open.get(session_id).cloned().unwrap_or_default())
    }
}

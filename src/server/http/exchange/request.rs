use std::borrow::Cow;
#[cfg(feature = "legacy")]
use std::sync::Arc;

use super::{Exchange, Watched};
use crate::http::HttpRequest;
use crate::incoming::{Incoming, Params};
use crate::jsonrpc::{ErrorObject, RequestId};
use crate::server::conn::Writer;
use crate::server::conn::handle::{ConnHandle, Sending};
use crate::server::dispatch::prepare;
use crate::server::http::auth;
use crate::server::http::body::status_for;
use crate::server::http::mirror::{self, Era};
use crate::server::meta::MetaView;
use crate::server::reader;
use crate::server::request_meta::RequestMeta;

impl Exchange<'_> {
    pub(super) fn request(
        &self,
        request: &HttpRequest,
        id: RequestId,
        method: Cow<'_, str>,
        params: Option<Params<'_>>,
    ) -> bool {
        let keep_alive = request.keep_alive();
        let (era, mut meta) = match self.checked(request, &method, params.as_ref()) {
            Ok(checked) => checked,
            Err((status, error)) => {
                return self.error_with(status, Some(&id), &error, &[], keep_alive);
            }
        };
        let token = self.token.borrow().clone();
        // A listen ends when its token expires (`Watched::Expired`). Any
        // other request, authorized when it came, runs to its end.
        let listen = method == crate::types::method::SUBSCRIPTIONS_LISTEN;
        let ends_at = listen
            .then(|| token.as_ref().and_then(|info| info.expires_at))
            .flatten();
        if let (Some(protection), Some(info)) = (&self.options.protection, &token) {
            let operations = operations(&method, params.as_ref());
            if let Err(refusal) = auth::authorize_operation(protection, info, &operations) {
                let headers: Vec<(&str, &str)> = (refusal.headers.iter())
                    .map(|(n, v)| (*n, v.as_str()))
                    .collect();
                return self.error_with(
                    refusal.status,
                    Some(&id),
                    &refusal.error(),
                    &headers,
                    keep_alive,
                );
            }
        }
        if let Some(meta) = &mut meta {
            meta.token = token.clone();
        }
        let events = request.headers.lists("accept", "text/event-stream")
            || request.headers.lists("accept", "*/*");
        let Ok(socket) = self.socket.try_clone() else {
            let error = ErrorObject::internal_error(
                "the server is out of file descriptors: retry in a moment",
            );
            return self.error_with(503, Some(&id), &error, &[("Retry-After", "1")], false);
        };
        let body = self.body(socket, events, request);
        if matches!(era, Era::Legacy(_)) {
            body.outlive_client();
        }
        if let Some(at) = ends_at {
            body.end_at(at);
        }
        let (end_tx, end) = crossbeam_channel::unbounded();
        let conn = ConnHandle::new(self.inner, Writer::Lines(Box::new(body.clone())), end_tx);
        // Its listens count per task with the listener's others.
        conn.act(Sending::Now, |c| c.share_followers(self.followers));
        // A legacy POST goes through the legacy front end, with its session.
        #[cfg(feature = "legacy")]
        let legacy = match &era {
            Era::Legacy(version) => {
                let front = crate::server::legacy::Front::new(self.inner, &conn);
                if let Some(token) = &token {
                    front.token_info(Arc::clone(token));
                }
                // A session's notifications reach one of its streams
                // through the sessions' listener (`sessions`), never a
                // POST's front end on its own.
                front.hear_none();
                match (self.sessions).enter(
                    (&front, &conn),
                    &body,
                    request,
                    (&id, &method),
                    version,
                    token.as_deref(),
                ) {
                    Ok(session) => Some((front, session)),
                    Err(unknown) => {
                        return self.error_with(404, None, &unknown.error(), &[], keep_alive);
                    }
                }
            }
            Era::Modern => None,
        };
        #[cfg(not(feature = "legacy"))]
        let _ = era;
        let key = self.inner.connections.connect(conn.as_connection());
        let bytes = request.body.len();
        match meta {
            // A modern request, its metadata read once (`checked`): as
            // `reader::dispatch` begins a request, with that metadata.
            Some(meta) => {
                let prepared = prepare(self.inner, &method, params, Some(meta));
                if let Some(job) = conn.begin(id.clone(), prepared, bytes) {
                    conn.run_inline(job);
                }
            }
            None => {
                let incoming = Incoming::Request {
                    id: id.clone(),
                    method,
                    params,
                };
                #[cfg(feature = "legacy")]
                let incoming = match &legacy {
                    Some((front, _)) => reader::FrontEnd::take(&mut front.clone(), incoming, bytes),
                    None => Some(incoming),
                };
                #[cfg(not(feature = "legacy"))]
                let incoming = Some(incoming);
                if let Some(incoming) = incoming {
                    reader::dispatch(self.inner, &conn, incoming, bytes);
                }
            }
        }
        #[cfg(feature = "legacy")]
        if let Some((front, session)) = &legacy {
            self.sessions.opened(front, &body, session);
        }
        // A listen is a stream as a legacy session's GET stream is: at the
        // cap it may give way to a new connection (`open`), or clients
        // that open listens and stop reading them would lock every later
        // client out (review http8). Marked before its acknowledgment goes
        // out: a client that read it and connects again at the cap finds
        // it a stream (CI run 39: under load the new client came first
        // and was answered 503).
        if listen {
            self.open.streaming(self.key, true);
        }
        // A POST has no next line to read: what the dispatch held back for
        // the reader's next read goes out now (`reader::dispatch`).
        conn.send_deferred();
        let watched = self.watch(&conn, &body, &end, Some(&id));
        if listen {
            self.open.streaming(self.key, false);
        }
        // A legacy request whose client went away, cancelled for the room
        // its connection gave way to (`open`): its asks are withdrawn too.
        #[cfg(feature = "legacy")]
        if watched == Watched::GaveWay
            && let Some((front, _)) = &legacy
        {
            front.asks().cancel(&id, Sending::Now);
        }
        #[cfg(feature = "legacy")]
        let front = legacy.map(|(front, session)| {
            self.sessions.leave(session);
            front
        });
        // Nothing is in flight by now (answered or cancelled), unless the
        // server stopped: then what is left is answered `-32603`.
        let _ = conn.shut_down(false);
        #[cfg(feature = "legacy")]
        if let Some(front) = front {
            front.finish();
        }
        self.inner.connections.disconnect(key);
        body.complete() && keep_alive && watched != Watched::Expired
    }

    /// The era of a request, its headers checked against its body (see
    /// `mirror`), with a modern request's metadata (its `_meta` read once,
    /// here, for the kernel too); or the status and error that refuse it.
    fn checked(
        &self,
        request: &HttpRequest,
        method: &str,
        params: Option<&Params<'_>>,
    ) -> Result<(Era, Option<RequestMeta>), (u16, ErrorObject)> {
        let status = |error: ErrorObject| (status_for(Some(error.code)), error);
        let fields = match mirror::members(params) {
            Ok(fields) => fields,
            // Params the kernel cannot read either (a member twice): it
            // refuses them in both eras (`-32602`), so a legacy request
            // gets its era's answer there; a modern one is refused here.
            Err(error) => {
                return match mirror::era(&request.headers, &MetaView::new(None)) {
                    Ok(Era::Legacy(version)) => Ok((Era::Legacy(version), None)),
                    _ => Err(status(error)),
                };
            }
        };
        let meta = MetaView::new(fields.meta);
        let era = mirror::era(&request.headers, &meta).map_err(status)?;
        if era != Era::Modern {
            return Ok((era, None));
        }
        // Spec 2026-07-28: `Mcp-Session-Id` is ignored, never echoed.
        mirror::check(self.inner, &request.headers, method, &fields).map_err(status)?;
        let meta = mirror::check_meta(&meta).map_err(|error| (400, error))?;
        Ok((era, Some(meta)))
    }
}

/// The operations a request is held to the scopes of
/// (`ProtectedResource::require_scopes_for`): its own, with what it
/// names ([`operation_name`]), and those of what it reaches besides: a
/// `completion/complete` draws on the prompt its `ref` names
/// (`prompts/get`) or the resource template (`resources/read` of the
/// template's URI); a `subscriptions/listen` hears of each URI of its
/// `resourceSubscriptions`, and a legacy `resources/subscribe` of its
/// `uri` (`resources/read`). Params that cannot be read add nothing:
/// dispatch refuses them as well (`-32602`).
fn operations(method: &str, params: Option<&Params<'_>>) -> Vec<(String, Option<String>)> {
    use crate::types::{
        CompleteRequestParams, CompletionReference, SubscriptionsListenRequestParams,
    };
    let mut operations = vec![(method.to_owned(), operation_name(method, params))];
    let Some(params) = params else {
        return operations;
    };
    // Read with the types dispatch reads them with: what is found here
    // is what the handler is given.
    let raw = params.raw().get();
    match method {
        "completion/complete" => {
            if let Ok(complete) = serde_json::from_str::<CompleteRequestParams>(raw) {
                operations.push(match complete.reference {
                    CompletionReference::Prompt(p) => ("prompts/get".into(), Some(p.name)),
                    CompletionReference::Resource(r) => ("resources/read".into(), Some(r.uri)),
                });
            }
        }
        "subscriptions/listen" => {
            if let Ok(listen) = serde_json::from_str::<SubscriptionsListenRequestParams>(raw) {
                for uri in listen
                    .notifications
                    .resource_subscriptions
                    .unwrap_or_default()
                {
                    operations.push(("resources/read".into(), Some(uri)));
                }
            }
        }
        "resources/subscribe" => {
            let uri = operations[0].1.clone();
            operations.push(("resources/read".into(), uri));
        }
        _ => {}
    }
    operations
}

/// What a request names, for the scopes an operation needs
/// (`ProtectedResource::require_scopes_for`): a `resources/read`'s (or
/// subscribe's) `uri`, any other's `name` (a tool's, a prompt's).
fn operation_name(method: &str, params: Option<&Params<'_>>) -> Option<String> {
    let fields = params?.fields().ok()?;
    let raw = match method {
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => fields.uri,
        _ => fields.name,
    }?;
    serde_json::from_str(raw.get()).ok()
}

use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use super::{Sessions, Store, Stream, UnknownSession};
use crate::server::conn::LineKind;
use crate::server::conn::handle::{ConnHandle, Sending};
use crate::server::connections::Connection;
use crate::server::event::ServerEvent;
use crate::server::http::body::Body;
use crate::server::request_meta::Owner;

impl Sessions {
    /// Opens session `id`'s GET stream, its connection `conn` writing to
    /// `body`: from here on the session's notifications go there, and on
    /// none of its POSTs. A stream the session had open ends: a client
    /// that reconnects (its old connection lost without a word, as a
    /// dropped network leaves it) is not refused for a stream the server
    /// still thinks open. `404` for a session not known. Returns the key
    /// [`Sessions::close_stream`] takes.
    pub fn open_stream(
        &self,
        (id, owner): (&str, Option<&Owner>),
        conn: &ConnHandle,
        body: &Body,
    ) -> Result<u64, UnknownSession> {
        let mut store = self.lock();
        store.kept(id, owner)?.seen(true);
        let key = store.next_key;
        store.next_key += 1;
        let stream = Stream {
            key,
            conn: conn.clone(),
            body: body.clone(),
        };
        let replaced = store.streams.insert(id.to_owned(), stream);
        drop(store);
        if let Some(replaced) = replaced {
            replaced.body.end_unanswered();
        }
        Ok(key)
    }

    /// The GET stream with `key` ended: the session's POSTs that begin from
    /// here on hear its notifications again.
    pub fn close_stream(&self, id: &str, key: u64) {
        let mut store = self.lock();
        if store.streams.get(id).is_some_and(|s| s.key == key) {
            store.streams.remove(id);
        }
    }

    /// The sessions as one of the server's connections: what is published
    /// reaches each session that hears it on one of its streams (see the
    /// module docs). Registered for as long as the listener serves.
    pub fn listener(&self) -> Arc<dyn Connection> {
        Arc::new(Listener(Arc::clone(&self.state)))
    }
}

/// The sessions of a listener, as one connection of the server's.
struct Listener(Arc<Mutex<Store>>);

impl Connection for Listener {
    /// `event` for each session that hears it, on one of its streams: its
    /// GET stream (list changes and resource updates), else its newest
    /// POST that can still carry it and whose token has not expired
    /// (`OpenPost::expires_at`; resource updates only: a list change
    /// concerns no request). Written after the sessions' lock is let go:
    /// a connection's write may wait for a client slow to read.
    fn publish(&self, event: &ServerEvent) {
        let targets: Vec<(ConnHandle, String)> = {
            let store = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            let streamed = (store.streams.iter()).filter_map(|(id, stream)| {
                Some((&store.by_id.get(id)?.session, stream.conn.clone(), true))
            });
            let now = SystemTime::now();
            let posted = (store.open.iter())
                .filter(|(id, _)| !store.streams.contains_key(*id))
                .filter_map(|(id, posts)| {
                    let post = (posts.iter().rev()).find(|post| {
                        post.body.takes_events() && post.expires_at.is_none_or(|at| at > now)
                    })?;
                    Some((&store.by_id.get(id)?.session, post.conn.clone(), false))
                });
            (streamed.chain(posted))
                .filter_map(|(session, conn, lists)| {
                    Some((conn, session.notification_on(event, lists)?))
                })
                .collect()
        };
        for (conn, line) in targets {
            conn.act(Sending::Now, |c| {
                c.write_line(line.into_bytes(), LineKind::Event)
            });
        }
    }

    /// The server stops: no client will answer an ask of a session's POST.
    fn stop(&self) {
        let store = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        for post in store.open.values().flatten() {
            post.front.asks().close();
        }
    }
}

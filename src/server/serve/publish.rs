//! The owner's side of the application's events: a published change goes
//! to every open subscription that asked for it, tagged with its id, and a
//! subscription that ends gets its final result.

use super::Owner;
use crate::jsonrpc::RequestId;
use crate::server::event::ServerEvent;
use crate::server::subscriptions::{Template, encode_final};

impl Owner {
    /// Delivers a published event to every subscription that asked for it,
    /// or closes subscriptions.
    pub(super) fn publish(&mut self, event: &ServerEvent) {
        #[cfg(feature = "legacy")]
        self.publish_legacy(event);
        match event {
            ServerEvent::CloseAll => self.close_all_subscriptions(),
            ServerEvent::Close(id) => {
                if self.subscriptions.remove(id) {
                    self.write_final(id);
                }
            }
            _ => {
                let Some(template) = Template::for_event(event) else {
                    return;
                };
                let mut line = Vec::with_capacity(template.head.len() + template.tail.len() + 24);
                let mut locked = self.output.lock();
                self.subscriptions.each_wanting(event, |id| {
                    if locked.failed() {
                        return;
                    }
                    line.clear();
                    line.extend_from_slice(&template.head);
                    // An id into a Vec: encoding cannot fail.
                    let _ = serde_json::to_writer(&mut line, id);
                    line.extend_from_slice(&template.tail);
                    locked.write(&line);
                });
            }
        }
    }

    /// Ends every open subscription with its final result.
    ///
    /// Spec 2026-07-28 basic/patterns/subscriptions ("Graceful Closure"):
    /// a server that ends a subscription SHOULD answer the listen request
    /// with a completion result. basic/patterns/cancellation also says a
    /// server MUST send `notifications/cancelled` for a listen it tears
    /// down; that page's own rules say a cancellation may only name a
    /// request still in progress, which a listen stops being the moment
    /// its final result is written. So a graceful end sends the final
    /// result alone, as the official Python SDK and rmcp do.
    pub(super) fn close_all_subscriptions(&mut self) {
        for id in self.subscriptions.drain() {
            self.write_final(&id);
        }
    }

    /// Writes the final result of subscription `id`.
    pub(super) fn write_final(&mut self, id: &RequestId) {
        let mut line = Vec::with_capacity(160);
        encode_final(&mut line, id, &self.inner.info_value);
        self.write(&line);
    }
}

//! [`Notifier`]: how the application publishes changes to the open
//! subscriptions (spec 2026-07-28 basic/patterns/subscriptions).

use std::fmt;
use std::sync::Arc;

use crate::jsonrpc::RequestId;
use crate::server::change_feed::Change;
use crate::server::connections::Connections;
use crate::server::event::ServerEvent;

/// Publishes changes to every open subscription that asked for them, on
/// every connection the server is serving (and, with a
/// [`ChangeFeed`](crate::ChangeFeed), on its other replicas). Cheap to
/// clone; use it from any thread.
///
/// Each call writes the change into every connection's output before it
/// returns, or, for a stdio or socket client that is behind (more than a
/// megabyte waits to be sent to it), holds it back in place of the last
/// change about the same thing (a list, a resource, a task), to be written
/// before any other line to that client: so what a handler publishes
/// precedes its reply. The server's worker threads send it (over HTTP the
/// call sends it: a response body never waits). A call returns at once
/// unless more than a megabyte of changes about different things is held
/// back (or was, and waits to be sent) for a client slow to read: then
/// it waits for that client, for as long as it reads at least
/// 16 KiB in each write timeout (`ServerBuilder::write_timeout`, 10 s):
/// one that reads less is let go.
///
/// ```
/// # use mcp_stdio::Server;
/// let server = Server::builder("files", "1.0.0").build();
/// let notifier = server.notifier();
/// std::thread::spawn(move || {
///     // ... a file changed:
///     notifier.resource_updated("file:///etc/motd");
/// });
/// ```
#[derive(Clone)]
pub struct Notifier {
    pub(crate) connections: Arc<Connections>,
}

impl fmt::Debug for Notifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Notifier").finish_non_exhaustive()
    }
}

impl Notifier {
    /// Sends `notifications/tools/list_changed` to the subscriptions that
    /// asked for `toolsListChanged`.
    pub fn tools_list_changed(&self) {
        self.connections.publish(Change::ToolsListChanged);
    }

    /// Sends `notifications/prompts/list_changed` to the subscriptions that
    /// asked for `promptsListChanged`.
    pub fn prompts_list_changed(&self) {
        self.connections.publish(Change::PromptsListChanged);
    }

    /// Sends `notifications/resources/list_changed` to the subscriptions
    /// that asked for `resourcesListChanged`.
    pub fn resources_list_changed(&self) {
        self.connections.publish(Change::ResourcesListChanged);
    }

    /// Sends `notifications/resources/updated` for `uri` to the
    /// subscriptions whose accepted `resourceSubscriptions` name it.
    pub fn resource_updated(&self, uri: &str) {
        self.connections
            .publish(Change::ResourceUpdated { uri: uri.into() });
    }

    /// Ends every open subscription gracefully: each listen request gets its
    /// final result. On this server only, not its other replicas.
    pub fn close_subscriptions(&self) {
        self.connections.publish_here(ServerEvent::CloseAll);
    }

    /// Ends the subscription opened by the listen request `id` gracefully
    /// (on every connection that has one with that id).
    pub fn close_subscription(&self, id: &RequestId) {
        self.connections
            .publish_here(ServerEvent::Close(id.clone()));
    }
}

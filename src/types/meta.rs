//! The `_meta` object: its type, the reserved keys, and the method names.
//!
//! `_meta` stays a plain JSON map on every wire type. The spec reserves a few
//! keys (see [`meta_key`]) and lets extensions add their own, so a map keeps
//! whatever the peer sent without a schema change on our side.

/// A `_meta` object (schema `MetaObject`, `RequestMetaObject`,
/// `ResultMetaObject`, `NotificationMetaObject`).
pub type Meta = serde_json::Map<String, serde_json::Value>;

/// The protocol revision this crate implements.
pub const LATEST_PROTOCOL_VERSION: &str = "2026-07-28";

/// The `_meta` keys reserved by the spec (basic/index, "Reserved keys").
pub mod meta_key {
    /// Opts a request into progress notifications; a string or an integer.
    pub const PROGRESS_TOKEN: &str = "progressToken";
    /// The protocol version of a request; required on every client request.
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    /// The client's `Implementation`; optional on client requests.
    pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    /// The client's `ClientCapabilities`; required on every client request.
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    /// The minimum `LoggingLevel` the server should emit for a request.
    pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
    /// Correlates a notification with its `subscriptions/listen` request.
    pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
    /// The server's `Implementation`; optional on every result.
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
    /// W3C Trace Context `traceparent`.
    pub const TRACEPARENT: &str = "traceparent";
    /// W3C Trace Context `tracestate`.
    pub const TRACESTATE: &str = "tracestate";
    /// W3C Baggage.
    pub const BAGGAGE: &str = "baggage";
}

/// Method and notification names of the 2026-07-28 schema.
pub mod method {
    /// `server/discover` (schema `DiscoverRequest`).
    pub const SERVER_DISCOVER: &str = "server/discover";
    /// `tools/list` (schema `ListToolsRequest`).
    pub const TOOLS_LIST: &str = "tools/list";
    /// `tools/call` (schema `CallToolRequest`).
    pub const TOOLS_CALL: &str = "tools/call";
    /// `resources/list` (schema `ListResourcesRequest`).
    pub const RESOURCES_LIST: &str = "resources/list";
    /// `resources/templates/list` (schema `ListResourceTemplatesRequest`).
    pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
    /// `resources/read` (schema `ReadResourceRequest`).
    pub const RESOURCES_READ: &str = "resources/read";
    /// `prompts/list` (schema `ListPromptsRequest`).
    pub const PROMPTS_LIST: &str = "prompts/list";
    /// `prompts/get` (schema `GetPromptRequest`).
    pub const PROMPTS_GET: &str = "prompts/get";
    /// `completion/complete` (schema `CompleteRequest`).
    pub const COMPLETION_COMPLETE: &str = "completion/complete";
    /// `subscriptions/listen` (schema `SubscriptionsListenRequest`).
    pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
    /// `notifications/cancelled` (schema `CancelledNotification`).
    pub const NOTIFICATION_CANCELLED: &str = "notifications/cancelled";
    /// `notifications/progress` (schema `ProgressNotification`).
    pub const NOTIFICATION_PROGRESS: &str = "notifications/progress";
    /// `notifications/message` (schema `LoggingMessageNotification`).
    pub const NOTIFICATION_MESSAGE: &str = "notifications/message";
    /// `notifications/tools/list_changed` (schema `ToolListChangedNotification`).
    pub const NOTIFICATION_TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
    /// `notifications/prompts/list_changed` (schema `PromptListChangedNotification`).
    pub const NOTIFICATION_PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
    /// `notifications/resources/list_changed` (schema `ResourceListChangedNotification`).
    pub const NOTIFICATION_RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
    /// `notifications/resources/updated` (schema `ResourceUpdatedNotification`).
    pub const NOTIFICATION_RESOURCES_UPDATED: &str = "notifications/resources/updated";
    /// `notifications/subscriptions/acknowledged` (schema
    /// `SubscriptionsAcknowledgedNotification`).
    pub const NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED: &str =
        "notifications/subscriptions/acknowledged";
    /// `elicitation/create` (schema `ElicitRequest`), only inside `inputRequests`.
    pub const ELICITATION_CREATE: &str = "elicitation/create";
    /// `sampling/createMessage` (schema `CreateMessageRequest`), only inside
    /// `inputRequests`.
    pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
    /// `roots/list` (schema `ListRootsRequest`), only inside `inputRequests`.
    pub const ROOTS_LIST: &str = "roots/list";
    /// `tasks/get` (Tasks extension, schema `GetTaskRequest`).
    pub const TASKS_GET: &str = "tasks/get";
    /// `tasks/update` (Tasks extension, schema `UpdateTaskRequest`).
    pub const TASKS_UPDATE: &str = "tasks/update";
    /// `tasks/cancel` (Tasks extension, schema `CancelTaskRequest`).
    pub const TASKS_CANCEL: &str = "tasks/cancel";
    /// `notifications/tasks` (Tasks extension, schema `TaskStatusNotification`).
    pub const NOTIFICATION_TASKS: &str = "notifications/tasks";
}

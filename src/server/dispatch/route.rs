//! The route table: which preparation a method goes to. A feature that is
//! not advertised is not served (`-32601`).

use std::sync::Arc;

use serde_json::json;

use crate::jsonrpc::{ErrorObject, error_code};
use crate::server::Inner;
use crate::server::handlers::MethodFn;
use crate::types::method;
use crate::version::{LEGACY_VERSIONS, SUPPORTED_VERSIONS};

/// Where a method goes.
#[derive(Clone)]
pub(super) enum Route {
    Discover,
    List(List),
    ToolsCall,
    ResourcesRead,
    PromptsGet,
    Complete,
    Listen,
    /// `tasks/get`, `tasks/update`, `tasks/cancel` (Tasks extension).
    Task(TaskMethod),
    /// An application-defined method: its handler, and whether it is
    /// inline.
    Custom(Arc<MethodFn>, bool),
}

/// The methods of the Tasks extension. `tasks/result` and `tasks/list`
/// are not among them: the extension removed them (`-32601`).
#[derive(Clone, Copy)]
pub(super) enum TaskMethod {
    Get,
    Update,
    Cancel,
}

/// The four paginated lists.
#[derive(Clone, Copy)]
pub(super) enum List {
    Tools,
    Resources,
    Templates,
    Prompts,
}

/// Finds the route of a method.
pub(super) fn route(inner: &Inner, name: &str) -> Result<Route, ErrorObject> {
    let registry = inner.registry.read().unwrap_or_else(|e| e.into_inner());
    let route = match name {
        method::SERVER_DISCOVER => Some(Route::Discover),
        method::TOOLS_LIST if registry.has_tools => Some(Route::List(List::Tools)),
        method::TOOLS_CALL if registry.has_tools => Some(Route::ToolsCall),
        method::RESOURCES_LIST if registry.has_resources => Some(Route::List(List::Resources)),
        method::RESOURCES_TEMPLATES_LIST if registry.has_resources => {
            Some(Route::List(List::Templates))
        }
        method::RESOURCES_READ if registry.has_resources => Some(Route::ResourcesRead),
        method::PROMPTS_LIST if registry.has_prompts => Some(Route::List(List::Prompts)),
        method::PROMPTS_GET if registry.has_prompts => Some(Route::PromptsGet),
        method::COMPLETION_COMPLETE if inner.completion.is_some() => Some(Route::Complete),
        method::SUBSCRIPTIONS_LISTEN => Some(Route::Listen),
        method::TASKS_GET if registry.has_tasks => Some(Route::Task(TaskMethod::Get)),
        method::TASKS_UPDATE if registry.has_tasks => Some(Route::Task(TaskMethod::Update)),
        method::TASKS_CANCEL if registry.has_tasks => Some(Route::Task(TaskMethod::Cancel)),
        _ => inner
            .methods
            .get(name)
            .map(|(handler, inline)| Route::Custom(Arc::clone(handler), *inline)),
    };
    route.ok_or_else(|| not_found(inner, name))
}

/// `-32601` for a method this server does not serve.
fn not_found(inner: &Inner, name: &str) -> ErrorObject {
    match name {
        // Spec 2026-07-28 basic/versioning: a modern-only server SHOULD name
        // its versions in any error to `initialize`; a legacy client may have
        // nothing else to show its user.
        "initialize" if !inner.serves_legacy() => ErrorObject::new(
            error_code::METHOD_NOT_FOUND,
            format!(
                "method not found: initialize (this server speaks only MCP {}, which has no initialize handshake)",
                SUPPORTED_VERSIONS.join(", ")
            ),
        )
        .with_data(json!({ "supported": SUPPORTED_VERSIONS })),
        // Reached only with modern `_meta`: a modern request for a method
        // the modern era removed.
        "initialize" => ErrorObject::new(
            error_code::METHOD_NOT_FOUND,
            format!(
                "method not found: initialize is not part of MCP {} (send it without the per-request _meta to open a legacy session, versions {})",
                SUPPORTED_VERSIONS.join(", "),
                LEGACY_VERSIONS.join(", ")
            ),
        )
        .with_data(json!({ "supported": SUPPORTED_VERSIONS, "legacy": LEGACY_VERSIONS })),
        _ => ErrorObject::method_not_found(name),
    }
}

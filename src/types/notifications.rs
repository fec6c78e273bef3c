//! Notification params not owned by a feature: progress, cancellation, and
//! the `_meta`-only params of the `list_changed` notifications (spec
//! basic/patterns/progress and basic/patterns/cancellation).

use serde::{Deserialize, Serialize};

use super::Meta;
use crate::jsonrpc::RequestId;

/// A progress token (schema `ProgressToken`): a string or an integer, the
/// same shape as a request id.
pub type ProgressToken = RequestId;

/// Params of `notifications/progress` (schema `ProgressNotificationParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressNotificationParams {
    /// The token from the request's `_meta.progressToken`.
    pub progress_token: ProgressToken,
    /// Progress so far; increases with every notification.
    pub progress: f64,
    /// The total, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// A human-readable description of the current step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Params of `notifications/cancelled` (schema `CancelledNotificationParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledNotificationParams {
    /// The id of the request to cancel; required by the schema.
    pub request_id: RequestId,
    /// Why, for logging.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Params that hold only `_meta` (schema `NotificationParams`), as sent with
/// the `list_changed` notifications.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NotificationParams {
    /// Notification metadata, such as `io.modelcontextprotocol/subscriptionId`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

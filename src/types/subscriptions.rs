//! `subscriptions/listen`: the filter, the acknowledgement, and the result
//! that ends a subscription (spec basic/patterns/subscriptions).

use serde::{Deserialize, Serialize};

use super::{Meta, ResultType, meta_key};
use crate::jsonrpc::RequestId;

/// Which notifications a subscription wants (schema `SubscriptionFilter`).
///
/// In an acknowledgement it says which of the requested ones the server
/// accepted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionFilter {
    /// `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_list_changed: Option<bool>,
    /// `notifications/prompts/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts_list_changed: Option<bool>,
    /// `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_list_changed: Option<bool>,
    /// URIs to receive `notifications/resources/updated` for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_subscriptions: Option<Vec<String>>,
    /// Task ids to receive `notifications/tasks` for (Tasks extension;
    /// the request must declare the extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_ids: Option<Vec<String>>,
}

/// Params of `subscriptions/listen` (schema `SubscriptionsListenRequestParams`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionsListenRequestParams {
    /// What to listen for.
    pub notifications: SubscriptionFilter,
    /// Request metadata; see [`super::meta_key`].
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Params of `notifications/subscriptions/acknowledged` (schema
/// `SubscriptionsAcknowledgedNotificationParams`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionsAcknowledgedNotificationParams {
    /// What the server accepted.
    pub notifications: SubscriptionFilter,
    /// Notification metadata, with `io.modelcontextprotocol/subscriptionId`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// The result that ends a subscription (schema `SubscriptionsListenResult`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionsListenResult {
    /// The kind of result; `complete` here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Result metadata; the schema requires
    /// `io.modelcontextprotocol/subscriptionId`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl SubscriptionsListenResult {
    /// A complete result for the subscription whose request had `id`.
    pub fn new(id: &RequestId) -> SubscriptionsListenResult {
        let mut meta = Meta::new();
        meta.insert(meta_key::SUBSCRIPTION_ID.to_owned(), id.to_value());
        SubscriptionsListenResult {
            result_type: Some(ResultType::Complete),
            meta: Some(meta),
        }
    }

    /// The `io.modelcontextprotocol/subscriptionId` in `_meta`, if readable.
    pub fn subscription_id(&self) -> Option<RequestId> {
        self.meta
            .as_ref()?
            .get(meta_key::SUBSCRIPTION_ID)
            .and_then(RequestId::from_value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_result_carries_subscription_id() {
        let res = SubscriptionsListenResult::new(&RequestId::from("listen-1"));
        assert_eq!(
            serde_json::to_string(&res).unwrap(),
            r#"{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"}}"#
        );
        assert_eq!(res.subscription_id(), Some(RequestId::from("listen-1")));
    }
}

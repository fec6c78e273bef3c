//! Every example of the 2026-07-28 spec, round-tripped through its Rust type.
//!
//! `tests/spec-examples/` is a verbatim copy of the spec's `examples/`
//! folder: one folder per schema type, named after it. Each file is
//! deserialized into the matching type and serialized back, and the result
//! must equal the original JSON (numbers compared by value, so `50` and
//! `50.0` match). A folder with no handler and no `SKIPPED` entry fails the
//! test, so new examples cannot be ignored by accident.
//!
//! Full JSON-RPC messages check `jsonrpc`, `id` and `method` and round-trip
//! `params`, `result` or `error`. Content blocks and other tagged members
//! go through their enum, which owns the tag, and the variant is checked.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use mcp_stdio::jsonrpc::{ErrorObject, RequestId, error_code};
use mcp_stdio::types::*;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Folders deliberately not checked, with the reason.
const SKIPPED: &[(&str, &str)] = &[];

type Check = Result<(), String>;

#[test]
fn every_spec_example_round_trips() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/spec-examples");
    let mut folders: Vec<_> = fs::read_dir(&root)
        .expect("tests/spec-examples exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    assert!(!folders.is_empty(), "no examples under {}", root.display());

    let mut failures = Vec::new();
    let mut checked = 0;
    for dir in &folders {
        let folder = dir
            .file_name()
            .and_then(|n| n.to_str())
            .expect("utf-8 name");
        if SKIPPED.iter().any(|(name, _)| *name == folder) {
            continue;
        }
        let mut files: Vec<_> = fs::read_dir(dir)
            .expect("readable folder")
            .map(|e| e.expect("readable entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        if files.is_empty() {
            failures.push(format!("{folder}: no .json files"));
        }
        for file in files {
            let text = fs::read_to_string(&file).expect("readable file");
            let value: Value = serde_json::from_str(&text).expect("example is valid JSON");
            let name = format!("{folder}/{}", file.file_name().unwrap().to_string_lossy());
            match check(folder, &value) {
                None => {
                    failures.push(format!("{folder}: no handler and not in SKIPPED"));
                    break;
                }
                Some(Ok(())) => checked += 1,
                Some(Err(e)) => failures.push(format!("{name}: {e}")),
            }
        }
    }
    for (name, _) in SKIPPED {
        if !folders.iter().any(|d| d.ends_with(name)) {
            failures.push(format!("SKIPPED lists {name}, which does not exist"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked >= folders.len() - SKIPPED.len());
}

/// Checks one example of `folder`; `None` if the folder is unknown.
fn check(folder: &str, v: &Value) -> Option<Check> {
    use ContentBlock as C;
    use PrimitiveSchemaDefinition as P;
    use SamplingMessageContentBlock as S;
    let res = match folder {
        // Content blocks: the enum owns the `type` tag.
        "TextContent" => tagged::<C>(v, |c| matches!(c, C::Text(_))),
        "ImageContent" => tagged::<C>(v, |c| matches!(c, C::Image(_))),
        "AudioContent" => tagged::<C>(v, |c| matches!(c, C::Audio(_))),
        "ResourceLink" => tagged::<C>(v, |c| matches!(c, C::ResourceLink(_))),
        "EmbeddedResource" => tagged::<C>(v, |c| matches!(c, C::Resource(_))),
        "ToolUseContent" => tagged::<S>(v, |c| matches!(c, S::ToolUse(_))),
        "ToolResultContent" => tagged::<S>(v, |c| matches!(c, S::ToolResult(_))),
        "TextResourceContents" => plain::<TextResourceContents>(v).and_then(|()| {
            tagged::<ResourceContents>(v, |c| matches!(c, ResourceContents::Text(_)))
        }),
        "BlobResourceContents" => plain::<BlobResourceContents>(v).and_then(|()| {
            tagged::<ResourceContents>(v, |c| matches!(c, ResourceContents::Blob(_)))
        }),

        // Elicitation field schemas: the struct alone, then the union.
        "StringSchema" => schema::<StringSchema>(v, |s| matches!(s, P::String(_))),
        "NumberSchema" => schema::<NumberSchema>(v, |s| matches!(s, P::Number(_))),
        "BooleanSchema" => schema::<BooleanSchema>(v, |s| matches!(s, P::Boolean(_))),
        "UntitledSingleSelectEnumSchema" => schema::<UntitledSingleSelectEnumSchema>(v, |s| {
            matches!(s, P::UntitledSingleSelectEnum(_))
        }),
        "TitledSingleSelectEnumSchema" => {
            schema::<TitledSingleSelectEnumSchema>(v, |s| matches!(s, P::TitledSingleSelectEnum(_)))
        }
        "UntitledMultiSelectEnumSchema" => schema::<UntitledMultiSelectEnumSchema>(v, |s| {
            matches!(s, P::UntitledMultiSelectEnum(_))
        }),
        "TitledMultiSelectEnumSchema" => {
            schema::<TitledMultiSelectEnumSchema>(v, |s| matches!(s, P::TitledMultiSelectEnum(_)))
        }
        "ElicitRequestFormParams" => plain::<ElicitRequestFormParams>(v).and_then(|()| {
            tagged::<ElicitRequestParams>(v, |p| matches!(p, ElicitRequestParams::Form(_)))
        }),
        "ElicitRequestURLParams" => plain::<ElicitRequestURLParams>(v).and_then(|()| {
            tagged::<ElicitRequestParams>(v, |p| matches!(p, ElicitRequestParams::Url(_)))
        }),

        // Plain data.
        "CallToolRequestParams" => plain::<CallToolRequestParams>(v),
        "CallToolResult" => plain::<CallToolResult>(v),
        "CancelledNotificationParams" => plain::<CancelledNotificationParams>(v),
        "ClientCapabilities" => plain::<ClientCapabilities>(v),
        "CompleteRequestParams" => plain::<CompleteRequestParams>(v),
        "CompleteResult" => plain::<CompleteResult>(v),
        "CreateMessageRequestParams" => plain::<CreateMessageRequestParams>(v),
        "CreateMessageResult" => plain::<CreateMessageResult>(v),
        "DiscoverResult" => plain::<DiscoverResult>(v),
        "ElicitResult" => plain::<ElicitResult>(v),
        "GetPromptRequestParams" => plain::<GetPromptRequestParams>(v),
        "GetPromptResult" => plain::<GetPromptResult>(v),
        "InputRequests" => plain::<InputRequests>(v),
        "InputRequiredResult" => plain::<InputRequiredResult>(v),
        "InputResponses" => input_responses(v),
        "ListPromptsResult" => plain::<ListPromptsResult>(v),
        "ListResourceTemplatesResult" => plain::<ListResourceTemplatesResult>(v),
        "ListResourcesResult" => plain::<ListResourcesResult>(v),
        "ListRootsResult" => plain::<ListRootsResult>(v),
        "ListToolsResult" => plain::<ListToolsResult>(v),
        "LoggingMessageNotificationParams" => plain::<LoggingMessageNotificationParams>(v),
        "ModelPreferences" => plain::<ModelPreferences>(v),
        "PaginatedRequestParams" => plain::<PaginatedRequestParams>(v),
        "ProgressNotificationParams" => plain::<ProgressNotificationParams>(v),
        "ReadResourceResult" => plain::<ReadResourceResult>(v),
        "Resource" => plain::<Resource>(v),
        "ResourceUpdatedNotificationParams" => plain::<ResourceUpdatedNotificationParams>(v),
        "Root" => plain::<Root>(v),
        "SamplingMessage" => plain::<SamplingMessage>(v),
        "ServerCapabilities" => plain::<ServerCapabilities>(v),
        "SubscriptionsListenResult" => plain::<SubscriptionsListenResult>(v),
        "Tool" => plain::<Tool>(v),

        // Input requests: `{method, params}` inside `inputRequests`.
        "CreateMessageRequest" => input_request(v, method::SAMPLING_CREATE_MESSAGE),
        "ElicitRequest" => input_request(v, method::ELICITATION_CREATE),
        "ListRootsRequest" => input_request(v, method::ROOTS_LIST),

        // JSON-RPC requests.
        "CallToolRequest" => request::<CallToolRequestParams>(v, method::TOOLS_CALL),
        "CompleteRequest" => request::<CompleteRequestParams>(v, method::COMPLETION_COMPLETE),
        "DiscoverRequest" => request::<RequestParams>(v, method::SERVER_DISCOVER),
        "GetPromptRequest" => request::<GetPromptRequestParams>(v, method::PROMPTS_GET),
        "ListPromptsRequest" => request::<PaginatedRequestParams>(v, method::PROMPTS_LIST),
        "ListResourceTemplatesRequest" => {
            request::<PaginatedRequestParams>(v, method::RESOURCES_TEMPLATES_LIST)
        }
        "ListResourcesRequest" => request::<PaginatedRequestParams>(v, method::RESOURCES_LIST),
        "ListToolsRequest" => request::<PaginatedRequestParams>(v, method::TOOLS_LIST),
        "ReadResourceRequest" => request::<ReadResourceRequestParams>(v, method::RESOURCES_READ),
        "SubscriptionsListenRequest" => {
            request::<SubscriptionsListenRequestParams>(v, method::SUBSCRIPTIONS_LISTEN)
        }

        // JSON-RPC notifications.
        "CancelledNotification" => {
            notification::<CancelledNotificationParams>(v, method::NOTIFICATION_CANCELLED)
        }
        "LoggingMessageNotification" => {
            notification::<LoggingMessageNotificationParams>(v, method::NOTIFICATION_MESSAGE)
        }
        "ProgressNotification" => {
            notification::<ProgressNotificationParams>(v, method::NOTIFICATION_PROGRESS)
        }
        "PromptListChangedNotification" => {
            notification::<NotificationParams>(v, method::NOTIFICATION_PROMPTS_LIST_CHANGED)
        }
        "ResourceListChangedNotification" => {
            notification::<NotificationParams>(v, method::NOTIFICATION_RESOURCES_LIST_CHANGED)
        }
        "ToolListChangedNotification" => {
            notification::<NotificationParams>(v, method::NOTIFICATION_TOOLS_LIST_CHANGED)
        }
        "ResourceUpdatedNotification" => notification::<ResourceUpdatedNotificationParams>(
            v,
            method::NOTIFICATION_RESOURCES_UPDATED,
        ),
        "SubscriptionsAcknowledgedNotification" => {
            notification::<SubscriptionsAcknowledgedNotificationParams>(
                v,
                method::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED,
            )
        }

        // JSON-RPC result responses; MRTR-capable ones may be input_required.
        "CallToolResultResponse" => response::<CallToolResult>(v, true),
        "CompleteResultResponse" => response::<CompleteResult>(v, false),
        "DiscoverResultResponse" => response::<DiscoverResult>(v, false),
        "GetPromptResultResponse" => response::<GetPromptResult>(v, true),
        "ListPromptsResultResponse" => response::<ListPromptsResult>(v, false),
        "ListResourceTemplatesResultResponse" => response::<ListResourceTemplatesResult>(v, false),
        "ListResourcesResultResponse" => response::<ListResourcesResult>(v, false),
        "ListToolsResultResponse" => response::<ListToolsResult>(v, false),
        "ReadResourceResultResponse" => response::<ReadResourceResult>(v, true),
        "SubscriptionsListenResultResponse" => response::<SubscriptionsListenResult>(v, false),

        // Bare error objects.
        "InternalError" => error_object(v, error_code::INTERNAL_ERROR),
        "InvalidParamsError" => error_object(v, error_code::INVALID_PARAMS),
        "MethodNotFoundError" => error_object(v, error_code::METHOD_NOT_FOUND),
        "ParseError" => error_object(v, error_code::PARSE_ERROR),

        // Full error responses.
        "HeaderMismatchError" => error_response(v, error_code::HEADER_MISMATCH),
        "MissingRequiredClientCapabilityError" => {
            error_response(v, error_code::MISSING_REQUIRED_CLIENT_CAPABILITY).and_then(|()| {
                let caps = v.pointer("/error/data/requiredCapabilities");
                plain::<ClientCapabilities>(caps.ok_or("no data.requiredCapabilities")?)
            })
        }
        "UnsupportedProtocolVersionError" => {
            error_response(v, error_code::UNSUPPORTED_PROTOCOL_VERSION).and_then(|()| {
                let data = v.pointer("/error/data").ok_or("no data")?;
                plain::<Vec<String>>(data.get("supported").ok_or("no data.supported")?)?;
                plain::<String>(data.get("requested").ok_or("no data.requested")?)
            })
        }

        _ => return None,
    };
    Some(res)
}

/// Deserializes `v` as `T`, serializes it back, and compares.
fn plain<T: DeserializeOwned + Serialize>(v: &Value) -> Check {
    let typed: T = serde_json::from_value(v.clone())
        .map_err(|e| format!("{}: {e}", std::any::type_name::<T>()))?;
    let back = serde_json::to_value(&typed).map_err(|e| format!("serialize: {e}"))?;
    json_eq(v, &back, "$")
}

/// Like [`plain`], and the parsed enum must be the expected variant.
fn tagged<T: DeserializeOwned + Serialize>(v: &Value, is_variant: fn(&T) -> bool) -> Check {
    let typed: T = serde_json::from_value(v.clone())
        .map_err(|e| format!("{}: {e}", std::any::type_name::<T>()))?;
    if !is_variant(&typed) {
        return Err(format!(
            "parsed as the wrong variant of {}",
            std::any::type_name::<T>()
        ));
    }
    plain::<T>(v)
}

/// A field schema: the struct alone, then as a `PrimitiveSchemaDefinition`.
fn schema<T: DeserializeOwned + Serialize>(
    v: &Value,
    is_variant: fn(&PrimitiveSchemaDefinition) -> bool,
) -> Check {
    plain::<T>(v)?;
    tagged::<PrimitiveSchemaDefinition>(v, is_variant)
}

/// Every response must parse as one of the typed results and round-trip.
fn input_responses(v: &Value) -> Check {
    plain::<InputResponses>(v)?;
    let map: InputResponses = serde_json::from_value(v.clone()).map_err(|e| e.to_string())?;
    for (key, res) in &map {
        let value = res.as_value();
        let typed = if res.to_elicit_result().is_ok() {
            plain::<ElicitResult>(value)
        } else if res.to_create_message_result().is_ok() {
            plain::<CreateMessageResult>(value)
        } else if res.to_list_roots_result().is_ok() {
            plain::<ListRootsResult>(value)
        } else {
            Err("matches no input response type".to_owned())
        };
        typed.map_err(|e| format!("{key}: {e}"))?;
    }
    Ok(())
}

/// An input request; a stray `jsonrpc` or `id` (the `ListRootsRequest`
/// example carries one) must be well formed and is then set aside, since an
/// input request inside `inputRequests` has neither.
fn input_request(v: &Value, method: &str) -> Check {
    let mut obj = v.as_object().ok_or("not an object")?.clone();
    if let Some(jsonrpc) = obj.remove("jsonrpc") {
        expect(&jsonrpc, &Value::from("2.0"), "jsonrpc")?;
    }
    if let Some(id) = obj.remove("id") {
        RequestId::from_value(&id).ok_or("bad id")?;
    }
    let rest = Value::Object(obj);
    let req: InputRequest = serde_json::from_value(rest.clone()).map_err(|e| e.to_string())?;
    if req.method() != method || matches!(req, InputRequest::Other { .. }) {
        return Err(format!("dispatched as {:?}", req.method()));
    }
    plain::<InputRequest>(&rest)
}

/// A JSON-RPC request whose params are `P`.
fn request<P: DeserializeOwned + Serialize>(v: &Value, method: &str) -> Check {
    envelope(v, &["jsonrpc", "id", "method", "params"])?;
    RequestId::from_value(v.get("id").ok_or("no id")?).ok_or("bad id")?;
    expect(
        v.get("method").ok_or("no method")?,
        &Value::from(method),
        "method",
    )?;
    plain::<P>(v.get("params").ok_or("no params")?)
}

/// A JSON-RPC notification whose params, if present, are `P`.
fn notification<P: DeserializeOwned + Serialize>(v: &Value, method: &str) -> Check {
    envelope(v, &["jsonrpc", "method", "params"])?;
    expect(
        v.get("method").ok_or("no method")?,
        &Value::from(method),
        "method",
    )?;
    match v.get("params") {
        Some(params) => plain::<P>(params),
        None => Ok(()),
    }
}

/// A JSON-RPC result response; with `mrtr`, `input_required` results go
/// through `InputRequiredResult` instead of `R`.
fn response<R: DeserializeOwned + Serialize>(v: &Value, mrtr: bool) -> Check {
    envelope(v, &["jsonrpc", "id", "result"])?;
    RequestId::from_value(v.get("id").ok_or("no id")?).ok_or("bad id")?;
    let result = v.get("result").ok_or("no result")?;
    let rt = result.get("resultType").map(ResultType::deserialize);
    match rt.transpose().map_err(|e| e.to_string())? {
        Some(ResultType::InputRequired) if mrtr => plain::<InputRequiredResult>(result),
        Some(ResultType::Complete) | None => plain::<R>(result),
        Some(other) => Err(format!("unexpected resultType {other}")),
    }
}

/// A bare error object with `code`.
fn error_object(v: &Value, code: i32) -> Check {
    let err: ErrorObject = serde_json::from_value(v.clone()).map_err(|e| e.to_string())?;
    if err.code != code {
        return Err(format!("code {} instead of {code}", err.code));
    }
    plain::<ErrorObject>(v)
}

/// A JSON-RPC error response with `code`.
fn error_response(v: &Value, code: i32) -> Check {
    envelope(v, &["jsonrpc", "id", "error"])?;
    match v.get("id") {
        None | Some(Value::Null) => {}
        Some(id) => {
            RequestId::from_value(id).ok_or("bad id")?;
        }
    }
    error_object(v.get("error").ok_or("no error")?, code)
}

/// `jsonrpc` is `"2.0"` and no top-level member is outside `allowed`.
fn envelope(v: &Value, allowed: &[&str]) -> Check {
    let obj = v.as_object().ok_or("not an object")?;
    expect(
        obj.get("jsonrpc").ok_or("no jsonrpc")?,
        &Value::from("2.0"),
        "jsonrpc",
    )?;
    match obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(format!("unexpected member {k:?}")),
        None => Ok(()),
    }
}

fn expect(got: &Value, want: &Value, what: &str) -> Check {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what} is {got}, expected {want}"))
    }
}

/// JSON equality where numbers compare by their `f64` value; the error
/// names the first differing path.
fn json_eq(want: &Value, got: &Value, path: &str) -> Check {
    match (want, got) {
        (Value::Number(a), Value::Number(b)) if a.as_f64() == b.as_f64() => Ok(()),
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .try_for_each(|(i, (a, b))| json_eq(a, b, &format!("{path}[{i}]"))),
        (Value::Object(a), Value::Object(b)) => {
            let keys: BTreeMap<&String, ()> = a.keys().chain(b.keys()).map(|k| (k, ())).collect();
            for key in keys.keys() {
                let sub = format!("{path}.{key}");
                match (a.get(*key), b.get(*key)) {
                    (Some(a), Some(b)) => json_eq(a, b, &sub)?,
                    (Some(_), None) => return Err(format!("{sub} lost in the round trip")),
                    (None, Some(_)) => return Err(format!("{sub} added in the round trip")),
                    (None, None) => {}
                }
            }
            Ok(())
        }
        _ if want == got => Ok(()),
        _ => Err(format!("{path}: expected {want}, got {got}")),
    }
}

#[test]
fn json_eq_compares_numbers_by_value() {
    let a = serde_json::json!({ "n": 50, "v": [1, "x"] });
    let b = serde_json::json!({ "n": 50.0, "v": [1.0, "x"] });
    assert!(json_eq(&a, &b, "$").is_ok());
    let c = serde_json::json!({ "n": 50, "v": [1, "y"] });
    assert_eq!(
        json_eq(&a, &c, "$").unwrap_err(),
        r#"$.v[1]: expected "x", got "y""#
    );
    let d = serde_json::json!({ "n": 50 });
    assert!(json_eq(&a, &d, "$").unwrap_err().contains("lost"));
}

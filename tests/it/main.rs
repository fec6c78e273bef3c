//! Integration tests: one binary, one file per feature. Every test drives a
//! server over an in-memory transport with the public API only and asserts
//! the exact JSON it writes.

// The everything example's fixture set, compiled into the tests so they
// check exactly what the example serves.
#[path = "../../examples/everything/conformance.rs"]
mod conformance;
#[path = "../../examples/everything/server.rs"]
mod everything;
#[path = "../../examples/everything/fixtures.rs"]
mod fixtures;

mod support;

mod arguments;
mod backpressure;
mod bad_input;
mod batch_sends;
mod cancellation;
mod change_feed;
mod ci_script;
#[cfg(feature = "client")]
mod client;
mod concurrency;
mod discover;
mod fixtures_md;
#[cfg(feature = "http")]
mod http;
#[cfg(feature = "http")]
mod http_auth;
#[cfg(feature = "http")]
mod http_backlog;
// Its tests use the legacy era too (`EraPolicy::LegacyOnly`).
#[cfg(all(feature = "http", feature = "client", feature = "legacy"))]
mod http_client;
#[cfg(feature = "http")]
mod http_hostile;
#[cfg(all(feature = "http", feature = "legacy"))]
mod http_legacy;
#[cfg(feature = "http")]
mod http_tasks;
#[cfg(feature = "https")]
mod https;
mod json_text;
mod large_lines;
mod layers;
#[cfg(feature = "legacy")]
mod legacy;
mod limits;
mod module_graph;
mod mrtr;
mod notifications;
// Its tests use the legacy era too (`EraPolicy::LegacyOnly`).
#[cfg(all(feature = "http", feature = "client", feature = "legacy"))]
mod oauth;
mod package;
mod prompts;
#[cfg(all(feature = "http", feature = "client", feature = "legacy"))]
mod proxy;
#[cfg(feature = "redis")]
mod redis_faults;
#[cfg(feature = "redis")]
mod redis_feed;
#[cfg(feature = "redis")]
mod redis_store;
#[cfg(feature = "redis-tls")]
mod redis_tls;
mod resources;
mod send_path;
mod shutdown;
mod slow_client;
mod spec_examples;
mod subscriptions;
mod tasks;
mod tools;
#[cfg(all(feature = "client", feature = "schemars"))]
mod typed;
mod unix_socket;

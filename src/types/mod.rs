//! The wire types of MCP 2026-07-28, named exactly as in the schema, one
//! file per spec section; everything is re-exported here.
//!
//! Conventions, so a reader can trust every type without opening it:
//! fields are snake_case and serialize camelCase; every `Option` is omitted
//! when `None` and defaults when absent; `_meta` is a plain JSON map
//! ([`Meta`]); unknown fields are ignored, never rejected, for forward
//! compatibility. Required fields the spec added in this revision but older
//! peers omit (`resultType`, `ttlMs`, `cacheScope`, `_meta`) are `Option`,
//! and the constructors fill `resultType`.
//!
//! Unions the schema leaves untagged are dispatched by hand on a string or
//! on which key is present, never by trying each variant in turn; unions
//! tagged by `"type"` are read through one `serde_json::Value` (the
//! `tagged` module), which is much less code than serde's derive.

mod capabilities;
mod common;
mod completion;
mod content;
mod discover;
mod elicitation;
mod elicitation_schema;
mod logging;
mod meta;
mod mrtr;
mod notifications;
mod ordered;
mod prompts;
mod resources;
mod roots;
mod sampling;
mod subscriptions;
mod tagged;
mod tasks;
mod tools;

pub use capabilities::*;
pub use common::*;
pub use completion::*;
pub use content::*;
pub use discover::*;
pub use elicitation::*;
pub use elicitation_schema::*;
pub use logging::*;
pub use meta::*;
pub use mrtr::*;
pub use notifications::*;
pub use prompts::*;
pub use resources::*;
pub use roots::*;
pub use sampling::*;
pub use subscriptions::*;
pub use tasks::*;
pub use tools::*;

//! The builder's registrations: what a server offers (tools, resources,
//! resource templates, prompts, completion, methods of its own), each
//! with its handler, and the features it advertises before anything is
//! registered.

use std::sync::Arc;

use serde_json::Value;

use super::ServerBuilder;
use crate::jsonrpc::ErrorObject;
use crate::outcome::{Outcome, PromptArguments, ToolOutcome};
use crate::server::arguments::{ToolArguments, advertised};
use crate::server::context::RequestContext;
use crate::server::handlers::{ResourceRequest, prompt_fn, resource_fn, typed_tool};
#[cfg(feature = "schemars")]
use crate::server::typed::{StructuredOutput, structured_tool, typed_prompt_fn};
use crate::types::{
    CompleteRequestParams, CompleteResult, GetPromptResult, Prompt, ReadResourceResult, Resource,
    ResourceTemplate, Tool,
};

impl ServerBuilder {
    /// Registers a tool that runs on the worker pool.
    ///
    /// The handler gets the call's `arguments` deserialized into `T` (use
    /// `serde_json::Value` to take them raw; a call without `arguments`
    /// reads as `{}`). With the `schemars` feature the tool advertises
    /// `T`'s schema as its `inputSchema`, unless the [`Tool`] was given
    /// one ([`ToolArguments`]). Arguments that do not fit `T` are answered
    /// without calling the handler, with a result whose `isError` is
    /// `true` and whose text names the field and what it must be, for the
    /// model to correct its call (spec server/tools, "Error Handling"). An
    /// unknown tool, or `arguments` that is not an object, is `-32602`.
    ///
    /// Two kinds of failure, on purpose: return `Ok` with a result whose
    /// `is_error` is `true` (see [`CallToolResult::error_text`]) when the
    /// tool ran and failed, so the model sees what went wrong and can
    /// correct itself; return `Err(ErrorObject)` only for protocol errors
    /// (a missing client capability, say), which the host handles and the
    /// model usually never sees.
    ///
    /// # Panics
    ///
    /// With `schemars`, when the tool has no input schema of its own and
    /// `T` is not a struct or a map (a tool's arguments are an object).
    ///
    /// [`CallToolResult::error_text`]: crate::types::CallToolResult::error_text
    pub fn tool<T, R, F>(mut self, tool: Tool, handler: F) -> Self
    where
        T: ToolArguments,
        R: Into<ToolOutcome>,
        F: Fn(&RequestContext, T) -> Result<R, ErrorObject> + Send + Sync + 'static,
    {
        let tool = advertised::<T>(tool);
        self.registry.add_tool(tool, typed_tool(handler), false);
        self
    }

    /// Registers a tool that runs inline on the reader thread: a promise
    /// that it is cheap and never blocks. While it runs no line is read
    /// (cancellations included), and in a pipelined burst the replies of
    /// pooled requests before it wait for the reader's flush. So for a
    /// client of either era; when it needs a legacy client's input, the
    /// wait for the answers (which the reader must read) goes on on the
    /// pool. Otherwise as [`ServerBuilder::tool`].
    pub fn inline_tool<T, R, F>(mut self, tool: Tool, handler: F) -> Self
    where
        T: ToolArguments,
        R: Into<ToolOutcome>,
        F: Fn(&RequestContext, T) -> Result<R, ErrorObject> + Send + Sync + 'static,
    {
        let tool = advertised::<T>(tool);
        self.registry.add_tool(tool, typed_tool(handler), true);
        self
    }

    /// Registers a tool with typed input and output, on the worker pool:
    /// its `inputSchema` is derived from `T` (unless the [`Tool`] has one),
    /// its `outputSchema` from the handler's output type `O`,
    /// and each result carries the handler's `O` as `structuredContent`
    /// plus the same JSON as a text block. Arguments are read as for
    /// [`ServerBuilder::tool`] (a result with `isError: true` saying what
    /// did not fit); an `O` that does not serialize to an object is `-32603`.
    /// The handler returns `O`, or `Outcome<O>` when it may ask the client
    /// for input ([`StructuredOutput`]).
    ///
    /// ```
    /// use mcp_stdio::Server;
    /// use mcp_stdio::types::Tool;
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Add {
    ///     a: i64,
    ///     b: i64,
    /// }
    ///
    /// #[derive(serde::Serialize, schemars::JsonSchema)]
    /// struct Sum {
    ///     sum: i64,
    /// }
    ///
    /// let server = Server::builder("calc", "1.0.0")
    ///     .structured_tool(Tool::new("add", "Adds two numbers."), |_ctx, args: Add| {
    ///         Ok(Sum { sum: args.a + args.b })
    ///     })
    ///     .build();
    /// ```
    ///
    /// A tool that ran and failed, which the model should see, is better
    /// written with [`ServerBuilder::tool`] and
    /// [`CallToolResult::error_text`](crate::types::CallToolResult::error_text).
    ///
    /// # Panics
    ///
    /// When `T` or `O` is not a struct (or a map).
    #[cfg(feature = "schemars")]
    #[cfg_attr(docsrs, doc(cfg(feature = "schemars")))]
    pub fn structured_tool<T, R, F>(mut self, tool: Tool, handler: F) -> Self
    where
        T: ToolArguments,
        R: StructuredOutput,
        F: Fn(&RequestContext, T) -> Result<R, ErrorObject> + Send + Sync + 'static,
    {
        let tool = advertised::<T>(tool).output::<R::Output>();
        self.registry
            .add_tool(tool, structured_tool(handler), false);
        self
    }

    /// [`ServerBuilder::structured_tool`] run inline on the reader thread (a
    /// promise that it is cheap and never blocks).
    #[cfg(feature = "schemars")]
    #[cfg_attr(docsrs, doc(cfg(feature = "schemars")))]
    pub fn inline_structured_tool<T, R, F>(mut self, tool: Tool, handler: F) -> Self
    where
        T: ToolArguments,
        R: StructuredOutput,
        F: Fn(&RequestContext, T) -> Result<R, ErrorObject> + Send + Sync + 'static,
    {
        let tool = advertised::<T>(tool).output::<R::Output>();
        self.registry.add_tool(tool, structured_tool(handler), true);
        self
    }

    /// Registers a static resource, read on the worker pool.
    pub fn resource<R, F>(mut self, resource: Resource, handler: F) -> Self
    where
        R: Into<Outcome<ReadResourceResult>>,
        F: Fn(&RequestContext, &ResourceRequest) -> Result<R, ErrorObject> + Send + Sync + 'static,
    {
        self.registry
            .add_resource(resource, resource_fn(handler), false);
        self
    }

    /// Registers a static resource read inline on the reader thread (cheap,
    /// never blocking).
    pub fn inline_resource<R, F>(mut self, resource: Resource, handler: F) -> Self
    where
        R: Into<Outcome<ReadResourceResult>>,
        F: Fn(&RequestContext, &ResourceRequest) -> Result<R, ErrorObject> + Send + Sync + 'static,
    {
        self.registry
            .add_resource(resource, resource_fn(handler), true);
        self
    }

    /// Registers a resource template such as `file:///{+path}` or
    /// `db://tables/{name}`; `{name}` matches one path segment and
    /// `{+name}` any text. The handler gets the variables in
    /// [`ResourceRequest::variables`]. Static resources are matched first,
    /// then templates in registration order.
    pub fn resource_template<R, F>(mut self, template: ResourceTemplate, handler: F) -> Self
    where
        R: Into<Outcome<ReadResourceResult>>,
        F: Fn(&RequestContext, &ResourceRequest) -> Result<R, ErrorObject> + Send + Sync + 'static,
    {
        self.registry.add_template(template, resource_fn(handler));
        self
    }

    /// Registers a prompt. Arguments the prompt declares as required are
    /// checked before the handler runs (`-32602` names the missing ones).
    pub fn prompt<R, F>(mut self, prompt: Prompt, handler: F) -> Self
    where
        R: Into<Outcome<GetPromptResult>>,
        F: Fn(&RequestContext, PromptArguments) -> Result<R, ErrorObject> + Send + Sync + 'static,
    {
        self.registry.add_prompt(prompt, prompt_fn(handler));
        self
    }

    /// Registers a prompt whose arguments are the fields of `T`: the
    /// prompt's `arguments` are derived from `T` (names, doc comments as
    /// descriptions, required unless `Option`), a call missing a required
    /// one is `-32602` before the handler runs, and the handler gets a `T`.
    /// Prompt arguments are strings: give `T` `String` and
    /// `Option<String>` fields.
    ///
    /// ```
    /// use mcp_stdio::Server;
    /// use mcp_stdio::types::{GetPromptResult, Prompt, PromptMessage, Role};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Review {
    ///     /// The code to review.
    ///     code: String,
    ///     /// What to focus on.
    ///     focus: Option<String>,
    /// }
    ///
    /// let server = Server::builder("reviewer", "1.0.0")
    ///     .typed_prompt(Prompt::new("review", "Reviews code."), |_ctx, args: Review| {
    ///         let focus = args.focus.unwrap_or_else(|| "anything".into());
    ///         let text = format!("Review this, looking at {focus}:\n{}", args.code);
    ///         Ok(GetPromptResult::new(vec![PromptMessage::text(Role::User, text)]))
    ///     })
    ///     .build();
    /// ```
    ///
    /// # Panics
    ///
    /// When `T` is not a struct (or a map).
    #[cfg(feature = "schemars")]
    #[cfg_attr(docsrs, doc(cfg(feature = "schemars")))]
    pub fn typed_prompt<T, R, F>(mut self, prompt: Prompt, handler: F) -> Self
    where
        T: serde::de::DeserializeOwned + schemars::JsonSchema,
        R: Into<Outcome<GetPromptResult>>,
        F: Fn(&RequestContext, T) -> Result<R, ErrorObject> + Send + Sync + 'static,
    {
        let prompt = prompt.arguments_from::<T>();
        self.registry.add_prompt(prompt, typed_prompt_fn(handler));
        self
    }

    /// Serves `completion/complete` (and advertises `completions`).
    pub fn completion<F>(mut self, handler: F) -> Self
    where
        F: Fn(&RequestContext, CompleteRequestParams) -> Result<CompleteResult, ErrorObject>
            + Send
            + Sync
            + 'static,
    {
        self.completion = Some(Arc::new(handler));
        self
    }

    /// Serves an application-defined request method (an extension's, for
    /// example) on the worker pool. The handler gets the params without
    /// `_meta` (see [`RequestContext::meta`]); an object result is stamped
    /// with `resultType` and `serverInfo` like every other result.
    pub fn on_request<F>(mut self, method: &str, handler: F) -> Self
    where
        F: Fn(&RequestContext, Value) -> Result<Value, ErrorObject> + Send + Sync + 'static,
    {
        self.methods
            .insert(method.to_owned(), (Arc::new(handler), false));
        self
    }

    /// Advertises tools even before any is registered (for servers that add
    /// them while serving).
    pub fn enable_tools(mut self) -> Self {
        self.registry.has_tools = true;
        self
    }

    /// Advertises resources even before any is registered.
    pub fn enable_resources(mut self) -> Self {
        self.registry.has_resources = true;
        self
    }

    /// Advertises prompts even before any is registered.
    pub fn enable_prompts(mut self) -> Self {
        self.registry.has_prompts = true;
        self
    }
}

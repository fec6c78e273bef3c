#!/usr/bin/env python3
"""Interop fixture server written with the Python SDK's 1.x line (mcp 1.30, `initialize` era), over stdio.

Serves the fixtures of tests/interop/CHECKS.md ("Fixture servers") as far as
the 2025-11-25 era allows, for our client's fallback to `initialize`:

    target/interop/py1/bin/python tests/interop/python/legacy_server.py

It uses mcp 1.x's low-level `Server` (public API) rather than FastMCP: FastMCP
can neither serve `resources/subscribe` nor announce `listChanged` without
reaching into its private `_mcp_server`.

What the era changes:

- No `server/discover`: mcp 1.30 answers it with -32602 "Invalid request
  parameters" (it cannot parse an unknown method), a non-modern error, which
  is what sends a dual-era client to `initialize` (2026-07-28 versioning:
  "the probe returns a non-modern error or times out, and the client falls
  back to `initialize`").
- No `subscriptions/listen`: `resources/subscribe` / `resources/unsubscribe`,
  and `bump` sends `notifications/resources/updated` to a subscribed session;
  `toggle_tool` sends `notifications/tools/list_changed` on the session.
- No MRTR: `ask` sends a standalone `elicitation/create` request mid-call (the
  era's way) and greets with the answer.
- mcp 1.30's `get_capabilities` hard-codes `resources.subscribe: false` even
  with a subscribe handler registered, so the capabilities are corrected here
  before `initialize` is answered.
"""

from __future__ import annotations

import anyio
from mcp import types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from pydantic import AnyUrl

# A 1×1 PNG (the same bytes as examples/everything's).
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
NAMES = ["Alice", "Bob", "Carol"]
COUNTER_URI = "mem://counter"
TEMPLATE = "test://template/{id}/data"
TEMPLATE_PREFIX, TEMPLATE_SUFFIX = "test://template/", "/data"

server = Server(
    "python-sdk-legacy-interop-fixtures",
    version="1.0.0",
    instructions="Interop fixture server (Python SDK 1.x): every tool, resource and prompt is a test fixture.",
)

state = {"counter": 0, "ephemeral": False}
subscribed: set[str] = set()


def schema(properties: dict | None = None, required: list[str] | None = None) -> dict:
    out: dict = {"type": "object", "properties": properties or {}}
    if required:
        out["required"] = required
    return out


FIXED_TOOLS = [
    types.Tool(
        name="echo",
        description="Returns its text unchanged.",
        inputSchema=schema({"text": {"type": "string"}}, ["text"]),
    ),
    types.Tool(
        name="add",
        description="Adds two numbers.",
        inputSchema=schema({"a": {"type": "number"}, "b": {"type": "number"}}, ["a", "b"]),
        outputSchema=schema({"sum": {"type": "number"}}, ["sum"]),
    ),
    types.Tool(name="test_image_content", description="Returns a 1x1 PNG image.", inputSchema=schema()),
    types.Tool(name="fail", description="Always fails as a tool (isError: true).", inputSchema=schema()),
    types.Tool(
        name="slow",
        description="Waits `ms` milliseconds (cancellable), then says done.",
        inputSchema=schema({"ms": {"type": "integer", "minimum": 0}}, ["ms"]),
    ),
    types.Tool(
        name="progress",
        description="Reports `steps` progress notifications, then says done.",
        inputSchema=schema({"steps": {"type": "integer", "minimum": 0}}),
    ),
    types.Tool(
        name="bump",
        description="Increments the counter behind mem://counter and notifies subscribers.",
        inputSchema=schema(),
    ),
    types.Tool(
        name="toggle_tool", description="Adds the tool `ephemeral`, or removes it if present.", inputSchema=schema()
    ),
    types.Tool(
        name="ask",
        description="Asks the user for their name (elicitation/create), then greets them.",
        inputSchema=schema(),
    ),
]
EPHEMERAL = types.Tool(
    name="ephemeral", description="Exists between two calls of toggle_tool.", inputSchema=schema()
)


def text(value: str) -> list[types.ContentBlock]:
    return [types.TextContent(type="text", text=value)]


# --- tools ------------------------------------------------------------------


@server.list_tools()
async def list_tools() -> list[types.Tool]:
    return FIXED_TOOLS + ([EPHEMERAL] if state["ephemeral"] else [])


@server.call_tool()
async def call_tool(name: str, arguments: dict):
    ctx = server.request_context
    if name == "echo":
        return text(arguments["text"])
    if name == "add":
        total = float(arguments["a"]) + float(arguments["b"])
        shown = str(int(total)) if total.is_integer() else str(total)
        return text(shown), {"sum": total}
    if name == "test_image_content":
        return [types.ImageContent(type="image", data=PNG, mimeType="image/png")]
    if name == "fail":
        return types.CallToolResult(content=text("the fail fixture always fails"), isError=True)
    if name == "slow":
        # notifications/cancelled cancels this handler's scope: the sleep ends there.
        await anyio.sleep(int(arguments["ms"]) / 1000)
        return text("done")
    if name == "progress":
        steps = int(arguments.get("steps", 3))
        token = ctx.meta.progressToken if ctx.meta else None
        if token is not None:
            for step in range(1, steps + 1):
                await ctx.session.send_progress_notification(
                    token, step, total=steps, message=f"step {step} of {steps}", related_request_id=ctx.request_id
                )
        return text("done")
    if name == "bump":
        state["counter"] += 1
        if COUNTER_URI in subscribed:
            await ctx.session.send_resource_updated(AnyUrl(COUNTER_URI))
        return text(str(state["counter"]))
    if name == "toggle_tool":
        state["ephemeral"] = not state["ephemeral"]
        await ctx.session.send_tool_list_changed()
        return text("added ephemeral" if state["ephemeral"] else "removed ephemeral")
    if name == "ask":
        answer = await ctx.session.elicit_form(
            "What is your name?",
            {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
            related_request_id=ctx.request_id,
        )
        who = (answer.content or {}).get("name", "") if answer.action == "accept" else ""
        return text(f"Nice to meet you, {who}!")
    if name == "ephemeral" and state["ephemeral"]:
        return text("ephemeral")
    # mcp 1.x's call_tool wrapper turns any exception into an isError result.
    raise ValueError(f"Unknown tool: {name}")


# --- resources ----------------------------------------------------------------


@server.list_resources()
async def list_resources() -> list[types.Resource]:
    return [
        types.Resource(
            uri=AnyUrl(COUNTER_URI),
            name="counter",
            description="A counter that the bump tool increments.",
            mimeType="text/plain",
        )
    ]


@server.list_resource_templates()
async def list_resource_templates() -> list[types.ResourceTemplate]:
    return [types.ResourceTemplate(uriTemplate=TEMPLATE, name="template-data", description="Data by id.")]


@server.read_resource()
async def read_resource(uri: AnyUrl):
    from mcp.server.lowlevel.helper_types import ReadResourceContents

    uri = str(uri)
    if uri == COUNTER_URI:
        return [ReadResourceContents(content=str(state["counter"]), mime_type="text/plain")]
    if uri.startswith(TEMPLATE_PREFIX) and uri.endswith(TEMPLATE_SUFFIX):
        id_ = uri[len(TEMPLATE_PREFIX) : -len(TEMPLATE_SUFFIX)]
        if id_ and "/" not in id_:
            return [ReadResourceContents(content=f"Data for ID: {id_}", mime_type="text/plain")]
    raise ValueError(f"Unknown resource: {uri}")


@server.subscribe_resource()
async def subscribe(uri: AnyUrl) -> None:
    subscribed.add(str(uri))


@server.unsubscribe_resource()
async def unsubscribe(uri: AnyUrl) -> None:
    subscribed.discard(str(uri))


# --- prompts and completion -----------------------------------------------------


@server.list_prompts()
async def list_prompts() -> list[types.Prompt]:
    return [
        types.Prompt(
            name="greet",
            description="Greets someone by name.",
            arguments=[types.PromptArgument(name="name", description="Who to greet.", required=True)],
        )
    ]


@server.get_prompt()
async def get_prompt(name: str, arguments: dict[str, str] | None) -> types.GetPromptResult:
    if name != "greet":
        raise ValueError(f"Unknown prompt: {name}")
    who = (arguments or {}).get("name")
    if not who:
        raise ValueError("greet needs the argument name")
    return types.GetPromptResult(
        messages=[
            types.PromptMessage(role="user", content=types.TextContent(type="text", text=f"Please greet {who} warmly."))
        ]
    )


@server.completion()
async def complete(ref, argument: types.CompletionArgument, context) -> types.Completion | None:
    if isinstance(ref, types.PromptReference) and ref.name == "greet" and argument.name == "name":
        return types.Completion(values=[n for n in NAMES if n.startswith(argument.value)])
    return None


async def main() -> None:
    options = server.create_initialization_options(
        NotificationOptions(tools_changed=True, resources_changed=True, prompts_changed=False)
    )
    # mcp 1.30 always says subscribe: false; this server does serve resources/subscribe.
    options.capabilities.resources.subscribe = True
    async with stdio_server() as (read, write):
        await server.run(read, write, options)


if __name__ == "__main__":
    anyio.run(main)

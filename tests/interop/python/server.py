#!/usr/bin/env python3
"""Interop fixture server written with the Python SDK (mcp 2.3, 2026-07-28 era), over stdio.

Serves the fixtures of tests/interop/CHECKS.md ("Fixture servers") with the
SDK's high-level `MCPServer` API, for our Rust interop client to drive:

    target/interop/py/bin/python tests/interop/python/server.py

Every fixture is expressible with the SDK's public API:

- `subscriptions/listen` is served by MCPServer's built-in subscription bus;
  `ctx.notify_resource_updated` / `ctx.notify_tools_changed` publish to it. At
  2026-07-28 the SDK derives `tools.listChanged`, `resources.subscribe` and
  `resources.listChanged` from listen being served.
- MRTR (`ask`) is a `Resolve(...)` parameter whose resolver returns `Elicit`:
  the SDK answers the first call with `resultType: "input_required"` and
  resumes on the retry's `inputResponses` / `requestState`.
- Tools that return plain text pass `structured_output=False`: the SDK would
  otherwise invent an outputSchema `{result: string}` for them.
- Cancellation: the SDK cancels the handler's task on `notifications/cancelled`,
  so `slow` is an `anyio.sleep`.

The server also answers legacy `initialize` sessions (the SDK serves both eras
on one stdio loop), but only partly: through MCPServer's public API a legacy
session gets `tools.listChanged: false` and `resources.subscribe: false`
(`run("stdio")` passes no NotificationOptions, and there is no public hook to
serve `resources/subscribe`), so the legacy spellings of the listen checks
cannot pass against it. The legacy era's fixtures are legacy_server.py's job.
"""

from __future__ import annotations

import base64
from typing import Annotated

import anyio
from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve
from mcp_types import CallToolResult, Completion, ImageContent, PromptReference, TextContent
from pydantic import BaseModel, Field

# A 1×1 PNG (the same bytes as examples/everything's).
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
assert base64.b64decode(PNG).startswith(b"\x89PNG")

NAMES = ["Alice", "Bob", "Carol"]

mcp = MCPServer(
    "python-sdk-interop-fixtures",
    version="1.0.0",
    instructions="Interop fixture server (Python SDK): every tool, resource and prompt is a test fixture.",
)

counter = 0  # behind mem://counter


# --- tools ------------------------------------------------------------------


@mcp.tool(description="Returns its text unchanged.", structured_output=False)
def echo(text: str) -> str:
    return text


class Sum(BaseModel):
    sum: float


@mcp.tool(description="Adds two numbers.")
def add(a: float, b: float) -> Annotated[CallToolResult, Sum]:
    # `Annotated[CallToolResult, Sum]`: the SDK publishes Sum's schema as the
    # outputSchema (and validates structuredContent against it) while the tool
    # chooses its own text: the sum, as CHECKS.md asks.
    total = a + b
    text = str(int(total)) if total.is_integer() else str(total)
    return CallToolResult(content=[TextContent(text=text)], structured_content={"sum": total})


@mcp.tool(description="Returns a 1x1 PNG image.")
def test_image_content() -> CallToolResult:
    return CallToolResult(content=[ImageContent(data=PNG, mime_type="image/png")])


@mcp.tool(description="Always fails as a tool (isError: true).")
def fail() -> CallToolResult:
    return CallToolResult(content=[TextContent(text="the fail fixture always fails")], is_error=True)


@mcp.tool(description="Waits `ms` milliseconds (cancellable), then says done.", structured_output=False)
async def slow(ms: Annotated[int, Field(ge=0)]) -> str:
    # notifications/cancelled cancels this task: the sleep raises and no result is sent.
    await anyio.sleep(ms / 1000)
    return "done"


@mcp.tool(description="Reports `steps` progress notifications, then says done.", structured_output=False)
async def progress(ctx: Context, steps: Annotated[int, Field(ge=0)] = 3) -> str:
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step} of {steps}")
    return "done"


@mcp.tool(description="Increments the counter behind mem://counter and publishes the update.", structured_output=False)
async def bump(ctx: Context) -> str:
    global counter
    counter += 1
    await ctx.notify_resource_updated("mem://counter")
    return str(counter)


def ephemeral() -> str:
    return "ephemeral"


@mcp.tool(description="Adds the tool `ephemeral`, or removes it if present.", structured_output=False)
async def toggle_tool(ctx: Context) -> str:
    names = {t.name for t in await mcp.list_tools()}
    if "ephemeral" in names:
        mcp.remove_tool("ephemeral")
        said = "removed ephemeral"
    else:
        mcp.add_tool(
            ephemeral,
            name="ephemeral",
            description="Exists between two calls of toggle_tool.",
            structured_output=False,
        )
        said = "added ephemeral"
    await ctx.notify_tools_changed()
    return said


class Name(BaseModel):
    name: str


def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


@mcp.tool(description="Asks the user for their name (MRTR), then greets them.", structured_output=False)
def ask(who: Annotated[Name, Resolve(ask_name)]) -> str:
    return f"Nice to meet you, {who.name}!"


# --- resources ----------------------------------------------------------------


@mcp.resource(
    "mem://counter", name="counter", description="A counter that the bump tool increments.", mime_type="text/plain"
)
def read_counter() -> str:
    return str(counter)


@mcp.resource("test://template/{id}/data", name="template-data", description="Data by id.", mime_type="text/plain")
def template_data(id: str) -> str:
    return f"Data for ID: {id}"


# --- prompts and completion -----------------------------------------------------


@mcp.prompt(description="Greets someone by name.")
def greet(name: Annotated[str, Field(description="Who to greet.")]) -> str:
    return f"Please greet {name} warmly."


@mcp.completion()
async def complete(ref, argument, context) -> Completion | None:
    if isinstance(ref, PromptReference) and ref.name == "greet" and argument.name == "name":
        return Completion(values=[n for n in NAMES if n.startswith(argument.value)])
    return None


if __name__ == "__main__":
    import sys

    # `--http PORT [--stateless]`: the same fixtures over Streamable HTTP at
    # http://127.0.0.1:PORT/mcp (tests/interop/http-client.sh).
    if "--http" in sys.argv:
        port = int(sys.argv[sys.argv.index("--http") + 1])
        mcp.run("streamable-http", port=port, stateless_http="--stateless" in sys.argv)
    else:
        mcp.run("stdio")

#!/usr/bin/env python3
"""Interop checks: the Python SDK's client (mcp 2.3, 2026-07-28 era) against a server.

Usage (with the 2.3 venv's python):

    client_checks.py [--wire FILE] <server command...>
    client_checks.py --url http://HOST:PORT/mcp

Runs every check of tests/interop/CHECKS.md ("The checks") in order over stdio
(or, with `--url`, over the SDK's Streamable HTTP client against a running
server) and prints one JSON line per check on stdout; diagnostics go to stderr.
`--wire FILE` (or MCP_INTEROP_WIRE=FILE) records every line on the wire, with
timestamps, for a bug report.

Everything goes through the SDK's public client API: `mcp.Client` over
`StdioServerParameters` (so `mode="auto"`: `server/discover`, falling back to
`initialize`), `call_tool` with `progress_callback`, `listen()`, the
elicitation callback behind the MRTR driver, and anyio cancellation (which the
SDK turns into `notifications/cancelled`).

The server runs under harness.py's `--wrap` wrapper, which records its exit
status for the `shutdown` check (the SDK's stdio transport does not expose the
process); harness.py also holds the runner and the helpers both Python client
drivers share.
"""

from __future__ import annotations

import base64
import json
import sys
import time

import anyio
import mcp_types as types
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.subscriptions import ResourceUpdated, ToolsListChanged

import harness  # harness.py beside this script: a script's directory is on sys.path
from harness import CHECK_TIMEOUT, FIXTURE_TOOLS, TEMPLATE, CheckFailed, check_shutdown, diag, expect

ERA = "2026-07-28"


def texts(result: types.CallToolResult | types.GetPromptResult) -> list[str]:
    if isinstance(result, types.GetPromptResult):
        blocks = [m.content for m in result.messages]
    else:
        blocks = result.content
    return [b.text for b in blocks if isinstance(b, types.TextContent)]


class Run(harness.Run):
    """State shared by the checks: the one connection, and what the callbacks saw."""

    def __init__(self, status_path: str) -> None:
        super().__init__(status_path)
        self.client: Client | None = None
        self.elicitations: list[types.ElicitRequestParams] = []

    async def elicit(self, context, params: types.ElicitRequestParams) -> types.ElicitResult:
        """The elicitation callback (the MRTR driver calls it): the user answers every form with name Ada."""
        self.elicitations.append(params)
        return types.ElicitResult(action="accept", content={"name": "Ada"})


async def check_discover(run: Run) -> str:
    c = run.client
    session = c.session
    expect(session.discover_result is not None, "connected without server/discover (fell back to initialize)")
    expect(c.protocol_version == ERA, f"negotiated {c.protocol_version!r}, want {ERA}")
    caps = c.server_capabilities
    missing = []
    if not (caps.tools and caps.tools.list_changed):
        missing.append("tools.listChanged")
    if not (caps.resources and caps.resources.subscribe):
        missing.append("resources.subscribe")
    if not (caps.resources and caps.resources.list_changed):
        missing.append("resources.listChanged")
    if caps.prompts is None:
        missing.append("prompts")
    if caps.completions is None:
        missing.append("completions")
    expect(not missing, f"capabilities lack {missing}")
    info = c.server_info
    who = f"{info.name} {info.version}" if info else "anonymous server"
    return f"{who}, {c.protocol_version}, supportedVersions {session.discover_result.supported_versions}"


async def check_tools_list(run: Run) -> str:
    tools = {t.name: t for t in (await run.client.list_tools()).tools}
    missing = [n for n in FIXTURE_TOOLS if n not in tools]
    expect(not missing, f"not listed: {missing}")
    bad = [n for n in FIXTURE_TOOLS if not isinstance(tools[n].input_schema, dict) or not tools[n].input_schema]
    expect(not bad, f"without inputSchema: {bad}")
    expect(tools["add"].output_schema is not None, "add has no outputSchema")
    return f"{len(tools)} tools, all {len(FIXTURE_TOOLS)} fixtures with an inputSchema"


async def check_tools_call_text(run: Run) -> str:
    text = "héllo ✓"
    result = await run.client.call_tool("echo", {"text": text})
    expect(not result.is_error, f"isError: {result}")
    got = texts(result)
    expect(got == [text], f"echo returned {got!r}")
    expect(got[0].encode() == text.encode(), "not byte for byte")
    return f"echo returned {text!r}"


async def check_tools_call_image(run: Run) -> str:
    result = await run.client.call_tool("test_image_content", {})
    images = [b for b in result.content if isinstance(b, types.ImageContent)]
    expect(len(images) == 1, f"content {result.content!r}")
    img = images[0]
    expect(img.mime_type == "image/png", f"mimeType {img.mime_type!r}")
    expect(len(img.data) > 0, "empty data")
    raw = base64.b64decode(img.data, validate=True)
    expect(raw.startswith(b"\x89PNG\r\n\x1a\n"), "data is not a PNG")
    return f"image/png, {len(raw)} bytes"


async def check_tools_call_structured(run: Run) -> str:
    result = await run.client.call_tool("add", {"a": 2, "b": 3})
    expect(not result.is_error, f"isError: {result}")
    sc = result.structured_content
    expect(isinstance(sc, dict) and sc.get("sum") == 5, f"structuredContent {sc!r}")
    return f"structuredContent {json.dumps(sc)}, text {texts(result)!r}"


async def check_tools_call_error(run: Run) -> str:
    try:
        result = await run.client.call_tool("fail", {})
    except MCPError as e:
        raise CheckFailed(f"a JSON-RPC error {e.code} {e} instead of an isError result") from None
    expect(result.is_error is True, f"isError {result.is_error!r}")
    return f"isError true: {texts(result)!r}"


async def check_tools_call_unknown(run: Run) -> str:
    try:
        result = await run.client.call_tool("no_such_tool", {})
        expect(result.is_error is True, f"a successful result {result!r}")
        first = "isError result"
    except MCPError as e:
        first = f"JSON-RPC error {e.code} {e.error.message!r}"
    again = await run.client.call_tool("echo", {"text": "still here"})
    expect(texts(again) == ["still here"], f"echo afterwards returned {texts(again)!r}")
    return f"{first}; echo afterwards works"


async def check_resources_list(run: Run) -> str:
    resources = (await run.client.list_resources()).resources
    uris = [str(r.uri) for r in resources]
    expect("mem://counter" in uris, f"mem://counter not in {uris}")
    return f"{len(uris)} resources, mem://counter listed"


async def check_resources_read(run: Run) -> str:
    result = await run.client.read_resource("mem://counter")
    contents = result.contents
    expect(len(contents) == 1, f"{len(contents)} contents")
    c = contents[0]
    expect(isinstance(c, types.TextResourceContents), f"not text: {c!r}")
    expect(c.text.isdecimal(), f"text {c.text!r} is not decimal")
    return f"mem://counter = {c.text!r} ({c.mime_type})"


async def check_resources_templates(run: Run) -> str:
    templates = [t.uri_template for t in (await run.client.list_resource_templates()).resource_templates]
    expect(TEMPLATE in templates, f"{TEMPLATE} not in {templates}")
    result = await run.client.read_resource("test://template/123/data")
    got = [c.text for c in result.contents if isinstance(c, types.TextResourceContents)]
    expect(any("123" in t for t in got), f"read returned {got!r}")
    return f"template listed; read {got[0]!r}"


async def check_prompts_list(run: Run) -> str:
    prompts = {p.name: p for p in (await run.client.list_prompts()).prompts}
    expect("greet" in prompts, f"greet not in {list(prompts)}")
    args = {a.name: a for a in prompts["greet"].arguments or []}
    expect("name" in args and args["name"].required is True, f"greet arguments {args!r}")
    return "greet listed with required argument name"


async def check_prompts_get(run: Run) -> str:
    result = await run.client.get_prompt("greet", {"name": "Ada"})
    got = texts(result)
    expect(any("Ada" in t for t in got), f"messages {got!r}")
    return f"{len(result.messages)} message(s): {got!r}"


async def check_completion(run: Run) -> str:
    result = await run.client.complete(types.PromptReference(name="greet"), {"name": "name", "value": "A"})
    values = result.completion.values
    expect(values == ["Alice"], f"values {values!r}")
    return f"values {values!r}"


async def check_progress(run: Run) -> str:
    events: list[tuple] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        events.append(("progress", progress, total))

    result = await run.client.call_tool("progress", {"steps": 3}, progress_callback=on_progress)
    events.append(("result",))
    expect(texts(result) == ["done"], f"result {texts(result)!r}")
    progress = [e for e in events if e[0] == "progress"]
    expect(len(progress) == 3, f"{len(progress)} progress notifications: {progress}")
    values = [e[1] for e in progress]
    expect(values == sorted(values) and len(set(values)) == 3, f"not increasing: {values}")
    expect(events[-1] == ("result",) and events.index(("result",)) == 3, f"order {events}")
    return f"progress {values} of {progress[0][2]}, then done"


async def check_cancellation(run: Run) -> str:
    started = time.monotonic()
    finished = False
    with anyio.move_on_after(0.2) as scope:
        await run.client.call_tool("slow", {"ms": 30000})
        finished = True
    elapsed = time.monotonic() - started
    expect(not finished, "slow finished before it was cancelled")
    expect(scope.cancelled_caught, "not cancelled")
    expect(elapsed < 1.0, f"the caller took {elapsed:.2f} s to see the cancellation")
    after = time.monotonic()
    result = await run.client.call_tool("echo", {"text": "after cancel"})
    expect(texts(result) == ["after cancel"], f"echo after cancel {texts(result)!r}")
    return f"cancelled after {elapsed * 1000:.0f} ms; echo after it took {(time.monotonic() - after) * 1000:.0f} ms"


async def first_event(sub, wanted, seconds: float = 5.0):
    with anyio.fail_after(seconds):
        async for event in sub:
            diag(f"listen event {event!r}")
            if wanted(event):
                return event
    raise CheckFailed("the listen stream ended without the event")


async def check_listen_resource_updated(run: Run) -> str:
    async with run.client.listen(resource_subscriptions=["mem://counter"]) as sub:
        honored = sub.honored.resource_subscriptions or []
        expect("mem://counter" in honored, f"ack honored {sub.honored!r}")
        bumped = await run.client.call_tool("bump", {})
        event = await first_event(sub, lambda e: isinstance(e, ResourceUpdated) and e.uri == "mem://counter")
    return f"acknowledged {honored}; bump ({texts(bumped)[0]}) delivered {event!r}"


async def check_listen_tools_changed(run: Run) -> str:
    async with run.client.listen(tools_list_changed=True) as sub:
        expect(sub.honored.tools_list_changed is True, f"ack honored {sub.honored!r}")
        toggled = await run.client.call_tool("toggle_tool", {})
        event = await first_event(sub, lambda e: isinstance(e, ToolsListChanged))
    # Toggle back so the server is as it was.
    back = await run.client.call_tool("toggle_tool", {})
    return f"toggle_tool ({texts(toggled)[0]}) delivered {event!r}; toggled back ({texts(back)[0]})"


async def check_mrtr_elicitation(run: Run) -> str:
    run.elicitations.clear()
    result = await run.client.call_tool("ask", {})
    expect(len(run.elicitations) == 1, f"{len(run.elicitations)} elicitations")
    params = run.elicitations[0]
    expect(isinstance(params, types.ElicitRequestFormParams), f"not form mode: {params!r}")
    props = params.requested_schema.get("properties", {})
    expect(props.get("name", {}).get("type") == "string", f"requestedSchema {params.requested_schema!r}")
    got = texts(result)
    expect(any("Ada" in t for t in got), f"final text {got!r}")
    return f"asked {params.message!r}; final {got!r}"


CHECKS = [
    ("discover", check_discover),
    ("tools.list", check_tools_list),
    ("tools.call.text", check_tools_call_text),
    ("tools.call.image", check_tools_call_image),
    ("tools.call.structured", check_tools_call_structured),
    ("tools.call.error", check_tools_call_error),
    ("tools.call.unknown", check_tools_call_unknown),
    ("resources.list", check_resources_list),
    ("resources.read", check_resources_read),
    ("resources.templates", check_resources_templates),
    ("prompts.list", check_prompts_list),
    ("prompts.get", check_prompts_get),
    ("completion", check_completion),
    ("progress", check_progress),
    ("cancellation", check_cancellation),
    ("listen.resource_updated", check_listen_resource_updated),
    ("listen.tools_changed", check_listen_tools_changed),
    ("mrtr.elicitation", check_mrtr_elicitation),
    ("shutdown", check_shutdown),
]


async def check_http_close(run: Run) -> str:
    """`shutdown` over HTTP: the client closed in time, and the server serves the next client."""
    expect(run.closed_in is not None, "the client did not close")
    expect(run.closed_in <= 5.0, f"closing took {run.closed_in:.2f} s")
    with anyio.fail_after(CHECK_TIMEOUT):
        async with Client(run.url, read_timeout_seconds=CHECK_TIMEOUT) as again:
            result = await again.call_tool("echo", {"text": "next client"})
            version = again.protocol_version
    expect(texts(result) == ["next client"], f"echo on a new client returned {texts(result)!r}")
    return f"the client closed in {run.closed_in * 1000:.0f} ms; a new client ({version}) got its echo"


async def drive(server_cmd: list[str], wire: str | None) -> int:
    if server_cmd[0] == "--url":
        # Streamable HTTP: the SDK's `Client` takes the URL (streamable_http_client).
        run = Run(harness.exit_status_path())
        run.url = server_cmd[1]
        run.client = Client(run.url, read_timeout_seconds=CHECK_TIMEOUT, elicitation_callback=run.elicit)
        return await harness.run_checks(CHECKS[:-1] + [("shutdown", check_http_close)], run, run.client)
    run = Run(harness.exit_status_path())
    command, args = harness.wrapped(server_cmd, run.status_path, wire)
    params = StdioServerParameters(command=command, args=args)
    run.client = Client(params, read_timeout_seconds=CHECK_TIMEOUT, elicitation_callback=run.elicit)
    return await harness.run_checks(CHECKS, run, run.client)


if __name__ == "__main__":
    sys.exit(harness.main(sys.argv[1:], __doc__, drive))

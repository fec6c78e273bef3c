#!/usr/bin/env python3
"""Interop checks, legacy direction: the Python SDK's 1.x client (mcp 1.30, `initialize` era) against a server.

Usage (with the 1.30 venv's python):

    legacy_client.py [--wire FILE] <server command...>
    legacy_client.py --url http://HOST:PORT/mcp

Runs the checks of tests/interop/CHECKS.md over stdio with mcp 1.x's public
client API (`stdio_client` + `ClientSession`), or with `--url` over its
Streamable HTTP client (`streamablehttp_client`, sessions with
`Mcp-Session-Id`) against a running server, and prints one JSON line per
check on stdout, in the table's order; diagnostics go to stderr. `--wire
FILE` (or MCP_INTEROP_WIRE=FILE) records every line on the wire.

In the initialize era `mrtr.elicitation` is the era's own elicitation: the
server may send `elicitation/create` mid-call, answered by the session's
`elicitation_callback` (a server that answers with a tool error instead is
skipped with its reason). The `listen.*` checks use what the
era has, seen through the session's `message_handler`:
`resources/subscribe` then `notifications/resources/updated` for
`listen.resource_updated`, and the session's untagged
`notifications/tools/list_changed` for `listen.tools_changed`.

`cancellation`: mcp 1.x has no cancellation API (abandoning a request sends
nothing, and the id the session mints is not exposed), so the check sends the
`notifications/cancelled` itself through the public `send_notification`,
reading the id the session is about to mint from its private `_request_id`
counter, the one private access in this file.

The server runs under harness.py's `--wrap` wrapper, which records its exit
status for the `shutdown` check; harness.py also holds the runner and the
helpers both Python client drivers share.
"""

from __future__ import annotations

import base64
import contextlib
import json
import sys
import time
from datetime import timedelta

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared.exceptions import McpError
from pydantic import AnyUrl

import harness  # harness.py beside this script: a script's directory is on sys.path
from harness import CHECK_TIMEOUT, FIXTURE_TOOLS, TEMPLATE, CheckFailed, Skip, check_shutdown, diag, expect

LEGACY_VERSION = types.LATEST_PROTOCOL_VERSION  # 2025-11-25 in mcp 1.30


def texts(blocks) -> list[str]:
    return [b.text for b in blocks if isinstance(b, types.TextContent)]


class Run(harness.Run):
    """State shared by the checks: the session, its initialize result, the notifications seen."""

    def __init__(self, status_path: str) -> None:
        super().__init__(status_path)
        self.session: ClientSession | None = None
        self.init: types.InitializeResult | None = None
        self.updated: list[str] = []  # uris of notifications/resources/updated
        self.tools_changed = 0  # count of notifications/tools/list_changed
        self.notified = anyio.Event()  # set (and replaced) on each of those
        self.elicited: list[str] = []  # messages of the server's elicitation/create requests

    async def on_elicitation(self, context, params: types.ElicitRequestParams) -> types.ElicitResult:
        """The session's elicitation_callback: answers every form with name Ada."""
        self.elicited.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async def on_message(self, message) -> None:
        """The session's message_handler: server notifications (and requests, exceptions) land here."""
        if isinstance(message, types.ServerNotification):
            root = message.root
            diag(f"notification {root.method}")
            if isinstance(root, types.ResourceUpdatedNotification):
                self.updated.append(str(root.params.uri))
                self.notified.set()
            elif isinstance(root, types.ToolListChangedNotification):
                self.tools_changed += 1
                self.notified.set()
        elif isinstance(message, Exception):
            diag(f"transport exception {message!r}")

    async def until(self, condition, seconds: float = 5.0) -> None:
        """Wait until `condition()` holds, woken by each notification."""
        with anyio.fail_after(seconds):
            while not condition():
                await self.notified.wait()
                self.notified = anyio.Event()


async def check_discover(run: Run) -> str:
    init = run.init
    expect(init.protocolVersion == LEGACY_VERSION, f"negotiated {init.protocolVersion!r}, want {LEGACY_VERSION}")
    caps = init.capabilities
    missing = []
    # Over HTTP too: list changes come on the session's GET stream.
    if not (caps.tools and caps.tools.listChanged):
        missing.append("tools.listChanged")
    if not (caps.resources and caps.resources.subscribe):
        missing.append("resources.subscribe")
    if not (caps.resources and caps.resources.listChanged):
        missing.append("resources.listChanged")
    if caps.prompts is None:
        missing.append("prompts")
    if caps.completions is None:
        missing.append("completions")
    expect(not missing, f"capabilities lack {missing}")
    return f"initialize: {init.serverInfo.name} {init.serverInfo.version}, {init.protocolVersion}"


async def check_tools_list(run: Run) -> str:
    tools = {t.name: t for t in (await run.session.list_tools()).tools}
    missing = [n for n in FIXTURE_TOOLS if n not in tools]
    expect(not missing, f"not listed: {missing}")
    bad = [n for n in FIXTURE_TOOLS if not tools[n].inputSchema]
    expect(not bad, f"without inputSchema: {bad}")
    return f"{len(tools)} tools, all {len(FIXTURE_TOOLS)} fixtures with an inputSchema"


async def check_tools_call_text(run: Run) -> str:
    text = "héllo ✓"
    result = await run.session.call_tool("echo", {"text": text})
    expect(not result.isError, f"isError: {result}")
    got = texts(result.content)
    expect(got == [text], f"echo returned {got!r}")
    return f"echo returned {text!r}"


async def check_tools_call_structured(run: Run) -> str:
    result = await run.session.call_tool("add", {"a": 2, "b": 3})
    expect(not result.isError, f"isError: {result}")
    sc = result.structuredContent
    expect(isinstance(sc, dict) and sc.get("sum") == 5, f"structuredContent {sc!r}")
    return f"structuredContent {json.dumps(sc)}, text {texts(result.content)!r}"


async def check_tools_call_error(run: Run) -> str:
    try:
        result = await run.session.call_tool("fail", {})
    except McpError as e:
        raise CheckFailed(f"a JSON-RPC error {e.error.code} {e} instead of an isError result") from None
    expect(result.isError is True, f"isError {result.isError!r}")
    return f"isError true: {texts(result.content)!r}"


async def check_tools_call_image(run: Run) -> str:
    result = await run.session.call_tool("test_image_content", {})
    images = [b for b in result.content if isinstance(b, types.ImageContent)]
    expect(len(images) == 1, f"content {result.content!r}")
    img = images[0]
    expect(img.mimeType == "image/png", f"mimeType {img.mimeType!r}")
    raw = base64.b64decode(img.data, validate=True)
    expect(raw.startswith(b"\x89PNG\r\n\x1a\n"), "data is not a PNG")
    return f"image/png, {len(raw)} bytes"


async def check_tools_call_unknown(run: Run) -> str:
    try:
        result = await run.session.call_tool("no_such_tool", {})
        expect(result.isError is True, f"a successful result {result!r}")
        first = "isError result"
    except McpError as e:
        first = f"JSON-RPC error {e.error.code} {e.error.message!r}"
    again = await run.session.call_tool("echo", {"text": "still here"})
    expect(texts(again.content) == ["still here"], f"echo afterwards returned {texts(again.content)!r}")
    return f"{first}; echo afterwards works"


async def check_resources_list(run: Run) -> str:
    uris = [str(r.uri) for r in (await run.session.list_resources()).resources]
    expect("mem://counter" in uris, f"mem://counter not in {uris}")
    return f"{len(uris)} resources, mem://counter listed"


async def check_resources_templates(run: Run) -> str:
    templates = [t.uriTemplate for t in (await run.session.list_resource_templates()).resourceTemplates]
    expect(TEMPLATE in templates, f"{TEMPLATE} not in {templates}")
    result = await run.session.read_resource(AnyUrl("test://template/123/data"))
    got = [c.text for c in result.contents if isinstance(c, types.TextResourceContents)]
    expect(any("123" in t for t in got), f"read returned {got!r}")
    return f"template listed; read {got[0]!r}"


async def check_prompts_list(run: Run) -> str:
    prompts = {p.name: p for p in (await run.session.list_prompts()).prompts}
    expect("greet" in prompts, f"greet not in {list(prompts)}")
    args = {a.name: a for a in prompts["greet"].arguments or []}
    expect("name" in args and args["name"].required is True, f"greet arguments {args!r}")
    return "greet listed with required argument name"


async def check_completion(run: Run) -> str:
    result = await run.session.complete(
        types.PromptReference(type="ref/prompt", name="greet"), {"name": "name", "value": "A"}
    )
    values = result.completion.values
    expect(values == ["Alice"], f"values {values!r}")
    return f"values {values!r}"


async def check_resources_read(run: Run) -> str:
    result = await run.session.read_resource(AnyUrl("mem://counter"))
    expect(len(result.contents) == 1, f"{len(result.contents)} contents")
    c = result.contents[0]
    expect(isinstance(c, types.TextResourceContents), f"not text: {c!r}")
    expect(c.text.isdecimal(), f"text {c.text!r} is not decimal")
    return f"mem://counter = {c.text!r} ({c.mimeType})"


async def check_prompts_get(run: Run) -> str:
    result = await run.session.get_prompt("greet", {"name": "Ada"})
    got = texts(m.content for m in result.messages)
    expect(any("Ada" in t for t in got), f"messages {got!r}")
    return f"{len(result.messages)} message(s): {got!r}"


async def check_progress(run: Run) -> str:
    events: list[tuple] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        events.append(("progress", progress, total))

    result = await run.session.call_tool("progress", {"steps": 3}, progress_callback=on_progress)
    events.append(("result",))
    expect(texts(result.content) == ["done"], f"result {texts(result.content)!r}")
    progress = [e for e in events if e[0] == "progress"]
    expect(len(progress) == 3, f"{len(progress)} progress notifications: {progress}")
    values = [e[1] for e in progress]
    expect(values == sorted(values) and len(set(values)) == 3, f"not increasing: {values}")
    expect(events.index(("result",)) == 3, f"order {events}")
    return f"progress {values} of {progress[0][2]}, then done"


async def check_cancellation(run: Run) -> str:
    session = run.session
    # The id call_tool is about to mint (see the module docstring: mcp 1.x exposes none).
    request_id = session._request_id  # noqa: SLF001
    started = time.monotonic()
    finished = False
    with anyio.move_on_after(0.2) as scope:
        await session.call_tool("slow", {"ms": 30000})
        finished = True
    expect(not finished and scope.cancelled_caught, "slow finished before it was cancelled")
    await session.send_notification(
        types.ClientNotification(
            types.CancelledNotification(
                params=types.CancelledNotificationParams(requestId=request_id, reason="interop cancellation check")
            )
        )
    )
    elapsed = time.monotonic() - started
    expect(elapsed < 1.0, f"cancelling took {elapsed:.2f} s")
    after = time.monotonic()
    result = await session.call_tool("echo", {"text": "after cancel"})
    expect(texts(result.content) == ["after cancel"], f"echo after cancel {texts(result.content)!r}")
    return (
        f"notifications/cancelled for request {request_id} after {elapsed * 1000:.0f} ms; "
        f"echo after it took {(time.monotonic() - after) * 1000:.0f} ms"
    )


async def check_listen_resource_updated(run: Run) -> str:
    # The era's spelling of the listen check: resources/subscribe, then the session notification.
    await run.session.subscribe_resource(AnyUrl("mem://counter"))
    run.updated.clear()
    bumped = await run.session.call_tool("bump", {})
    await run.until(lambda: "mem://counter" in run.updated)
    await run.session.unsubscribe_resource(AnyUrl("mem://counter"))
    return f"resources/subscribe acknowledged; bump ({texts(bumped.content)[0]}) delivered updated for {run.updated}"


async def check_listen_tools_changed(run: Run) -> str:
    # The era's spelling: the session's own (untagged) notifications/tools/list_changed.
    caps = run.init.capabilities
    if not (caps.tools and caps.tools.listChanged):
        raise Skip("the server offers no tools.listChanged to this client")
    seen = run.tools_changed
    toggled = await run.session.call_tool("toggle_tool", {})
    await run.until(lambda: run.tools_changed > seen)
    back = await run.session.call_tool("toggle_tool", {})  # so the server is as it was
    return (
        f"toggle_tool ({texts(toggled.content)[0]}) delivered notifications/tools/list_changed; "
        f"toggled back ({texts(back.content)[0]})"
    )


async def check_elicitation(run: Run) -> str:
    """`ask`, the initialize-era way: the server may send its own `elicitation/create`, answered by
    the session's elicitation_callback. Multi round-trip results are 2026-07-28 only, so a server that
    cannot bridge them to this era answers with a tool error: skipped with its reason."""
    result = await run.session.call_tool("ask", {})
    text = " ".join(texts(result.content))
    if result.isError:
        raise Skip(f"the server does not ask a legacy client for input: {text!r}")
    expect("Ada" in text and run.elicited, f"ask returned {text!r}, elicited {run.elicited}")
    return f"elicitation/create {run.elicited[0]!r} answered; ask returned {text!r}"


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
    ("mrtr.elicitation", check_elicitation),
    ("shutdown", check_shutdown),
]


@contextlib.asynccontextmanager
async def connect(run: Run, params: StdioServerParameters):
    """The session over stdio, initialized: `run.session` and `run.init` are set inside."""
    async with stdio_client(params) as (read, write):
        async with ClientSession(
            read, write, read_timeout_seconds=timedelta(seconds=CHECK_TIMEOUT),
            message_handler=run.on_message,
            elicitation_callback=run.on_elicitation,
        ) as session:
            run.init = await session.initialize()
            run.session = session
            yield


@contextlib.asynccontextmanager
async def connect_http(run: Run, url: str):
    """The session over Streamable HTTP, initialized; `run.session_id` is the id the server assigned."""
    async with streamablehttp_client(url) as (read, write, get_session_id):
        async with ClientSession(
            read, write, read_timeout_seconds=timedelta(seconds=CHECK_TIMEOUT),
            message_handler=run.on_message,
            elicitation_callback=run.on_elicitation,
        ) as session:
            run.init = await session.initialize()
            run.session = session
            run.session_id = get_session_id()
            yield


def post_status(url: str, session_id: str) -> int:
    """The HTTP status of a `ping` POSTed under `session_id` (urllib: not the SDK)."""
    import urllib.error
    import urllib.request

    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Mcp-Session-Id": session_id,
        "MCP-Protocol-Version": LEGACY_VERSION,
    })
    try:
        with urllib.request.urlopen(request, timeout=CHECK_TIMEOUT) as response:
            return response.status
    except urllib.error.HTTPError as e:
        return e.code


async def check_http_close(run: Run) -> str:
    """`shutdown` over HTTP: the SDK ends its session with DELETE on close; the server then
    answers that session id with 404 (2025-11-25 transports, Session Management)."""
    expect(run.closed_in is not None, "the client did not close")
    expect(run.closed_in <= 5.0, f"closing took {run.closed_in:.2f} s")
    expect(run.session_id, "the server assigned no Mcp-Session-Id")
    status = await anyio.to_thread.run_sync(post_status, run.url, run.session_id)
    expect(status == 404, f"a POST under the closed session {run.session_id!r} got {status}, want 404")
    return f"session {run.session_id[:8]}… closed in {run.closed_in * 1000:.0f} ms; a POST under it now gets 404"


async def drive(server_cmd: list[str], wire: str | None) -> int:
    if server_cmd[0] == "--url":
        run = Run(harness.exit_status_path())
        run.url, run.session_id = server_cmd[1], None
        checks = CHECKS[:-1] + [("shutdown", check_http_close)]
        return await harness.run_checks(checks, run, connect_http(run, run.url), cannot_connect="cannot connect (initialize)")
    run = Run(harness.exit_status_path())
    command, args = harness.wrapped(server_cmd, run.status_path, wire)
    params = StdioServerParameters(command=command, args=args)
    return await harness.run_checks(CHECKS, run, connect(run, params), cannot_connect="cannot connect (initialize)")


if __name__ == "__main__":
    sys.exit(harness.main(sys.argv[1:], __doc__, drive))

#!/usr/bin/env python3
"""Interop checks: the MCP Inspector's CLI (pinned in package.json here) against an HTTP server.

Usage (python3, stdlib only):

    inspector_checks.py INSPECTOR URL modern|legacy

INSPECTOR is the CLI's launcher (target/interop/inspector/node_modules/.bin/mcp-inspector),
URL a running server's endpoint. Each check is one or two invocations of
`mcp-inspector --cli URL --transport http --protocol-era ERA --format json
--method ...`, whose JSON answer it asserts; it prints one JSON line per check
of tests/interop/CHECKS.md on stdout, in the table's order (diagnostics on
stderr). Invocations run four at a time: each is a process of its own that
connects, makes its one request and exits.

The CLI has no way to express some checks (no completion method, no
progress output, no cancellation, no subscriptions, no elicitation
handler): those are `skip` with the reason, and `mrtr.elicitation` asserts
at least that the server refuses the call with the missing capability named.
"""

from __future__ import annotations

import base64
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import time

FIXTURE_TOOLS = ["echo", "add", "test_image_content", "fail", "slow", "progress", "bump", "toggle_tool", "ask"]
TEMPLATE = "test://template/{id}/data"
VERSIONS = {"modern": "2026-07-28", "legacy": "2025-11-25"}
TIMEOUT = 60


class CheckFailed(Exception):
    """A check's assertion did not hold."""


class Skip(Exception):
    """The CLI cannot express the check."""


def expect(condition, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


class Cli:
    """Runs the Inspector's CLI against one URL in one era."""

    def __init__(self, inspector: str, url: str, era: str) -> None:
        self.inspector, self.url, self.era = inspector, url, era
        # The CLI keeps a server catalog; a scratch one leaves $HOME alone.
        self.env = dict(os.environ, MCP_CATALOG_PATH=os.path.join(tempfile.mkdtemp(prefix="inspector-"), "mcp.json"))

    def run(self, method: str, *args: str) -> tuple[int, dict, float]:
        """(exit status, the JSON answer from stdout or the error envelope from stderr, seconds)."""
        cmd = [self.inspector, "--cli", self.url, "--transport", "http", "--protocol-era", self.era,
               "--format", "json", "--method", method, *args]
        started = time.monotonic()
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, env=self.env)
        elapsed = time.monotonic() - started
        for stream in (done.stdout, done.stderr):
            for line in stream.splitlines():
                if line.startswith("{"):
                    try:
                        return done.returncode, json.loads(line), elapsed
                    except ValueError:
                        pass
        raise CheckFailed(f"{method}: no JSON answer (exit {done.returncode}): {done.stderr.strip()[-300:]!r}")

    def result(self, method: str, *args: str) -> dict:
        """The `result` of a call that must succeed."""
        code, answer, _ = self.run(method, *args)
        expect(code == 0 and "result" in answer, f"{method} {' '.join(args)}: exit {code}, {json.dumps(answer)[:300]}")
        return answer["result"]

    def call(self, tool: str, *pairs: str) -> dict:
        args = ["--tool-name", tool]
        if pairs:
            args += ["--tool-arg", *pairs]
        return self.result("tools/call", *args)


def texts(result: dict) -> list[str]:
    return [b["text"] for b in result.get("content", []) if b.get("type") == "text"]


def check_discover(cli: Cli) -> str:
    init = cli.result("initialize")
    want = VERSIONS[cli.era]
    expect(init.get("protocolVersion") == want, f"negotiated {init.get('protocolVersion')!r}, want {want}")
    caps = init.get("capabilities", {})
    missing = [name for name in ("tools", "resources", "prompts", "completions") if name not in caps]
    expect(not missing, f"capabilities lack {missing}: {caps}")
    info = init.get("serverInfo", {})
    expect(info.get("name"), f"no serverInfo: {init}")
    return f"{info['name']} {info.get('version')}, {want}"


def check_tools_list(cli: Cli) -> str:
    tools = {t["name"]: t for t in cli.result("tools/list")["tools"]}
    missing = [n for n in FIXTURE_TOOLS if n not in tools]
    expect(not missing, f"not listed: {missing}")
    bad = [n for n in FIXTURE_TOOLS if tools[n].get("inputSchema", {}).get("type") != "object"]
    expect(not bad, f"no object inputSchema: {bad}")
    expect(tools["add"].get("outputSchema"), "add has no outputSchema")
    return f"{len(tools)} tools, all {len(FIXTURE_TOOLS)} fixtures with an inputSchema"


def check_tools_call_text(cli: Cli) -> str:
    text = "héllo ✓"
    got = texts(cli.call("echo", f"text={text}"))
    expect(got == [text], f"echo returned {got!r}")
    return f"echo returned {text!r}"


def check_tools_call_image(cli: Cli) -> str:
    images = [b for b in cli.call("test_image_content").get("content", []) if b.get("type") == "image"]
    expect(len(images) == 1, f"{len(images)} image blocks")
    expect(images[0].get("mimeType") == "image/png", f"mimeType {images[0].get('mimeType')!r}")
    raw = base64.b64decode(images[0]["data"], validate=True)
    expect(raw.startswith(b"\x89PNG\r\n\x1a\n"), "data is not a PNG")
    return f"image/png, {len(raw)} bytes"


def check_tools_call_structured(cli: Cli) -> str:
    result = cli.call("add", "a=2", "b=3")
    expect(result.get("structuredContent", {}).get("sum") == 5, f"structuredContent {result.get('structuredContent')!r}")
    return f"structuredContent {json.dumps(result['structuredContent'])}, text {texts(result)!r}"


def check_tools_call_error(cli: Cli) -> str:
    code, answer, _ = cli.run("tools/call", "--tool-name", "fail")
    # The CLI prints the result, then exits non-zero with `tool_is_error`.
    result = answer.get("result", {})
    expect(result.get("isError") is True, f"exit {code}: {json.dumps(answer)[:300]}")
    return f"isError true: {texts(result)!r} (CLI exit {code})"


def check_tools_call_unknown(cli: Cli) -> str:
    code, answer, _ = cli.run("tools/call", "--tool-name", "no_such_tool")
    expect(code != 0, f"exit 0 for an unknown tool: {answer}")
    if "result" in answer:
        expect(answer["result"].get("isError") is True, f"a plain result: {answer}")
        first = "isError result"
    else:
        first = f"error {answer.get('error', {}).get('code')!r}: {answer.get('error', {}).get('message')!r}"
    again = texts(cli.call("echo", "text=still here"))
    expect(again == ["still here"], f"echo afterwards returned {again!r}")
    return f"{first}; echo afterwards works"


def check_resources_list(cli: Cli) -> str:
    uris = [r["uri"] for r in cli.result("resources/list")["resources"]]
    expect("mem://counter" in uris, f"mem://counter not in {uris}")
    return f"{len(uris)} resources, mem://counter listed"


def check_resources_read(cli: Cli) -> str:
    contents = cli.result("resources/read", "--uri", "mem://counter")["contents"]
    expect(len(contents) == 1 and contents[0].get("text", "").isdecimal(), f"contents {contents!r}")
    return f"mem://counter = {contents[0]['text']!r}"


def check_resources_templates(cli: Cli) -> str:
    templates = [t["uriTemplate"] for t in cli.result("resources/templates/list")["resourceTemplates"]]
    expect(TEMPLATE in templates, f"{TEMPLATE} not in {templates}")
    got = [c.get("text", "") for c in cli.result("resources/read", "--uri", "test://template/123/data")["contents"]]
    expect(any("123" in t for t in got), f"read returned {got!r}")
    return f"template listed; read {got[0]!r}"


def check_prompts_list(cli: Cli) -> str:
    prompts = {p["name"]: p for p in cli.result("prompts/list")["prompts"]}
    expect("greet" in prompts, f"greet not in {list(prompts)}")
    args = {a["name"]: a for a in prompts["greet"].get("arguments", [])}
    expect(args.get("name", {}).get("required") is True, f"greet arguments {args!r}")
    return "greet listed with required argument name"


def check_prompts_get(cli: Cli) -> str:
    messages = cli.result("prompts/get", "--prompt-name", "greet", "--prompt-args", "name=Ada")["messages"]
    got = [m["content"].get("text", "") for m in messages]
    expect(any("Ada" in t for t in got), f"messages {got!r}")
    return f"{len(messages)} message(s): {got!r}"


def skip(reason: str):
    def check(cli: Cli) -> str:
        raise Skip(reason)

    return check


def check_elicitation(cli: Cli) -> str:
    code, answer, _ = cli.run("tools/call", "--tool-name", "ask")
    message = json.dumps(answer)
    expect(code != 0 and "elicitation" in message, f"ask without an elicitation capability: exit {code}, {message[:300]}")
    raise Skip(f"the CLI declares no elicitation capability; the server refused ask naming it: {message[:200]}")


def check_shutdown(cli: Cli) -> str:
    # Each invocation is a whole client lifetime: connect, one request, close, exit.
    code, answer, elapsed = cli.run("tools/call", "--tool-name", "echo", "--tool-arg", "text=bye")
    expect(code == 0 and texts(answer.get("result", {})) == ["bye"], f"exit {code}: {answer}")
    expect(elapsed < 20, f"the CLI took {elapsed:.1f} s to connect, call and exit")
    return f"connect, echo, close and exit 0 in {elapsed:.1f} s"


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
    ("completion", skip("the Inspector CLI has no completion/complete method")),
    ("progress", skip("the Inspector CLI shows no progress notifications")),
    ("cancellation", skip("the Inspector CLI cannot cancel a request")),
    ("listen.resource_updated", skip("the Inspector CLI cannot subscribe")),
    ("listen.tools_changed", skip("the Inspector CLI cannot subscribe")),
    ("mrtr.elicitation", check_elicitation),
    ("shutdown", check_shutdown),
]


def verdict(check, cli: Cli) -> tuple[str, str]:
    try:
        return "pass", check(cli)
    except Skip as e:
        return "skip", str(e)
    except CheckFailed as e:
        return "fail", str(e)
    except Exception as e:  # noqa: BLE001 - one failure must not stop the rest
        return "fail", f"{type(e).__name__}: {e}"


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[2] not in VERSIONS:
        print(__doc__, file=sys.stderr)
        return 2
    cli = Cli(*argv)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        futures = [(name, pool.submit(verdict, check, cli)) for name, check in CHECKS]
        failed = False
        for name, future in futures:
            status, detail = future.result()
            print(json.dumps({"check": name, "status": status, "detail": detail}, ensure_ascii=False), flush=True)
            failed |= status == "fail"
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""Lists the tools of a Streamable HTTP server and calls one, with the
Python SDK 2.x's `Client` (2026-07-28, falling back as the SDK does):

    http_smoke.py URL TOOL JSON_ARGUMENTS

Prints the number of tools, then the call's text content joined, on
stdout; exits 1 on any failure. Used by tests/interop/serve-http.sh to
drive servers that do not serve the interop fixtures (the npm reference
servers behind `mcp-stdio serve-http`).
"""

from __future__ import annotations

import json
import sys

import anyio
from mcp import Client


async def main(url: str, tool: str, arguments: dict) -> int:
    with anyio.fail_after(30):
        async with Client(url, read_timeout_seconds=30) as client:
            tools = await client.list_tools()
            result = await client.call_tool(tool, arguments)
    texts = [c.text for c in result.content if getattr(c, "type", "") == "text"]
    print(f"{len(tools.tools)} tools; {tool}: {' '.join(texts)}")
    return 1 if result.is_error else 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sys.exit(anyio.run(main, sys.argv[1], sys.argv[2], json.loads(sys.argv[3])))

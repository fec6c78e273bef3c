#!/usr/bin/env python3
"""The echo tool of `examples/echo` on the Python SDK's (mcp 2.3) Streamable HTTP server:
stateless, JSON responses, uvicorn. The Python side of scripts/bench-http.sh.

Usage (with the 2.3 venv's python):

    http_echo_server.py [PORT]

Serves http://127.0.0.1:PORT/mcp (a free port when PORT is 0 or absent) and
prints that URL on stderr once the port is chosen.
"""

from __future__ import annotations

import socket
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("python-http-echo")


@server.tool(description="Returns its text unchanged.")
def echo(text: str) -> str:
    return text


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] != "0" else free_port()
    print(f"http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
    server.settings.log_level = "WARNING"
    server.run("streamable-http", host="127.0.0.1", port=port, stateless_http=True, json_response=True)

"""A throwaway Streamable HTTP front for a stdio MCP server, so that the
official conformance suite (which speaks HTTP) can drive the everything
example: POST a request, get its response as application/json. No SSE, so
the scenarios that need a stream (listen, progress) fail here, and the
HTTP-only checks are answered by this front (Mcp-Method / Mcp-Name
mismatches: -32020), not by the server.

    python3 bridge.py PORT SERVER-COMMAND...
"""
import itertools, json, os, queue, subprocess, sys, threading
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler

proc = subprocess.Popen(sys.argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
waiting = {}
lock = threading.Lock()
ids = itertools.count(1)
wire = open(os.environ.get('BRIDGE_WIRE_LOG', os.devnull), 'w')

def reader():
    for line in proc.stdout:
        wire.write("<< " + line); wire.flush()
        msg = json.loads(line)
        if "id" in msg and "method" not in msg:
            with lock:
                q = waiting.pop(msg["id"], None)
            if q: q.put(msg)
threading.Thread(target=reader, daemon=True).start()

NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri",
         "tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def reply(self, code, body):
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(code)
        if body is not None: self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers(); self.wfile.write(data)
    def do_GET(self): self.reply(405, None)
    def do_DELETE(self): self.reply(405, None)
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        msg = json.loads(body)
        if "method" not in msg or "id" not in msg:
            wire.write(">> " + json.dumps(msg) + "\n"); wire.flush()
            proc.stdin.write(json.dumps(msg) + "\n"); proc.stdin.flush()
            return self.reply(202, None)
        m = msg["method"]
        hm = self.headers.get("Mcp-Method")
        hn = self.headers.get("Mcp-Name")
        params = msg.get("params") or {}
        if (hm is not None and hm != m) or (m in NAMED and hn is not None and hn != params.get(NAMED[m])):
            return self.reply(400, {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32020, "message": "header mismatch"}})
        orig = msg["id"]; mine = next(ids); msg["id"] = mine
        q = queue.Queue()
        with lock: waiting[mine] = q
        wire.write(">> " + json.dumps(msg) + "\n"); wire.flush()
        proc.stdin.write(json.dumps(msg) + "\n"); proc.stdin.flush()
        try:
            resp = q.get(timeout=25)
        except queue.Empty:
            return self.reply(504, None)
        resp["id"] = orig
        self.reply(200, resp)

ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()

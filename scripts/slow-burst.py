#!/usr/bin/env python3
"""loadgen's memory burst from a client slower than the server: 400 calls
of `echo` whose texts cycle through 20 sizes from 1 KiB to 3 MiB, 64 in
flight, written and read by Python. Prints the server's threads and memory
before, at most during, and 1 s after.

    scripts/slow-burst.py target/release/examples/echo --pooled
"""
import json
import subprocess
import sys
import threading
import time

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
server = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def send(message):
    server.stdin.write((json.dumps(message) + "\n").encode())
    server.stdin.flush()


def status():
    fields = dict(line.split(":", 1) for line in open(f"/proc/{server.pid}/status"))
    return int(fields["Threads"]), fields["VmRSS"].strip()


send({"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {"_meta": META}})
server.stdout.readline()
time.sleep(1)
print("before: threads %d, VmRSS %s" % status())
sizes = [int(1024 * (3 * 1024) ** (i / 19)) for i in range(20)]
calls, window = 400, threading.Semaphore(64)


def write_calls():
    for n in range(1, calls + 1):
        window.acquire()
        arguments = {"text": "x" * sizes[n % 20]}
        params = {"_meta": META, "name": "echo", "arguments": arguments}
        send({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params})


writer = threading.Thread(target=write_calls)
writer.start()
most = 0
for _ in range(calls):
    server.stdout.readline()
    window.release()
    most = max(most, status()[0])
writer.join()
time.sleep(1)
print("1 s after: threads %d, VmRSS %s; at most %d threads" % (*status(), most))
server.stdin.close()
server.wait()

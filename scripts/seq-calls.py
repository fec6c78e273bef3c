#!/usr/bin/env python3
"""N sequential `tools/call echo` calls (32 bytes) to SERVER, nothing else: to count
what one sequential call costs the server, with the server's command wrapped in
`perf stat` (loadgen's runs mix the sequential and pipelined phases). Prints the
p50 (Python's own time included: a count, not a latency). See BENCHMARKS.md.

    scripts/seq-calls.py N SERVER [ARGS...]"""
import subprocess, sys, os, time
n = int(sys.argv[1]); cmd = sys.argv[2:]
META = '{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
w, r = p.stdin, p.stdout
def call(i, line):
    w.write(line.encode())
    got = r.readline()
    assert got and b'"error"' not in got, got
w.write(('{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{"_meta":%s}}\n' % META).encode()); r.readline()
lines = ['{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"_meta":%s,"name":"echo","arguments":{"text":"%s"}}}\n' % (i, META, "x"*32) for i in range(1, n+1)]
t = time.perf_counter_ns(); lat = []
for i, line in enumerate(lines):
    s = time.perf_counter_ns(); call(i, line); lat.append(time.perf_counter_ns() - s)
lat.sort()
print("p50 %.1f us" % (lat[len(lat)//2]/1000), file=sys.stderr)
w.close(); p.wait()

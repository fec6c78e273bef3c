#!/usr/bin/env python3
"""Wire transcript of an MCP stdio server, for byte-for-byte comparisons.

Usage:
    transcript.py [--out FILE] [--stderr FILE] SERVER_CMD CORPUS

SERVER_CMD is one shell-style string (split with shlex, not run by a shell),
e.g. 'target/debug/examples/everything'.

The corpus is sent ONE line at a time. After each line the harness reads the
server's stdout until that line's reply has arrived, then waits for a short
quiet period (QUIET_MS without a new line) so that anything written right
after the reply is attributed to the same input. The transcript is

    ## <corpus comment>
    >> <corpus line, exactly as written in the corpus (placeholders unexpanded)>
    << <server line, masked>
    !! <harness note, e.g. a reply that did not come in time>
    == eof            (stdin closed)
    << ...            (whatever the server wrote until it exited)
    == exit <code>

Corpus syntax (one entry per line):
    # text            a comment, copied to the transcript as "## text"
    #!nowait          the NEXT line expects no reply: collect for FIXED_MS only
    #!wait MS         the NEXT line: collect for exactly MS ms, no reply expected
    #!hex HEX         send these raw bytes (hex, may be empty) plus "\n"
                      (invalid UTF-8, blank lines, CR, BOM...)
    #!sleep MS        send nothing, collect for MS ms
    #!pad N           the NEXT line: "$PAD" is replaced by N bytes "x"
                      (over-long lines without a 16 MiB corpus line)
    (empty line)      ignored (use "#!hex" to send a blank line)
    anything else     sent verbatim followed by "\n"

Placeholders expanded in a line just before it is sent (the transcript shows
the unexpanded corpus line):
    $STATE                      the raw text of the last requestState the
                                server sent (use it inside a JSON string:
                                "requestState":"$STATE" or "$STATE-TAMPERED")
    "$ASK_ID"                   (with the quotes) the JSON id of the last
                                request the server sent to the client
    "$ASK_ID:<method>"          the JSON id of the last server request of
                                that method (e.g. "$ASK_ID:roots/list")

When is a reply "the reply for that line"?
  * a JSON object with "method" and "id": a response (result or error) whose
    id equals that id (or is null); for subscriptions/listen also the
    acknowledgement tagged with that id. A request the server sends to the
    client (it waits for the client's answer) also ends the wait.
  * a JSON object with "method" and no "id": a notification, no reply:
    collect for FIXED_MS.
  * a JSON object without "method" but with "result"/"error": an answer to
    one of the server's own requests: wait for a response to any request
    still awaiting its reply, or for a new server request (at most
    ANSWER_TIMEOUT; running out is not an error).
  * anything else (not JSON, not an object, an object without method): a
    response whose id is null or equals the line's id.
  A reply that does not come within REPLY_TIMEOUT is noted with "!!".

Masking (the only changes made to server output): every sealed requestState
  v1.<base64url payload>.<base64url HMAC>
is shown as <STATE payload=... mac=<MAC>> where the decoded payload JSON is
kept except its expiry ("e":<unix ms>) which becomes "e":"<EXPIRY>". The
HMAC key is random per process and the expiry is a timestamp: nothing else
in the everything server's output varies from run to run. Output bytes that
are not UTF-8 are shown with backslash escapes; a last line without a
newline is marked "<<(no newline)".
"""

import argparse
import base64
import json
import os
import queue
import re
import shlex
import subprocess
import sys
import threading
import time

FIXED_MS = 150          # notifications and #!nowait lines
QUIET_MS = 40           # quiet period after a reply
ASK_QUIET_MS = 150      # quiet period after a server request (more may follow)
REPLY_TIMEOUT = 15.0    # seconds
ANSWER_TIMEOUT = 2.0    # seconds, for a line answering a server request
EXIT_TIMEOUT = 30.0     # seconds, after stdin is closed

SEALED = re.compile(rb'v1\.([A-Za-z0-9_-]+={0,2})\.([A-Za-z0-9_-]+={0,2})')
EXPIRY = re.compile(rb'"e":[0-9]+')


def b64url_decode(data: bytes) -> bytes:
    return base64.urlsafe_b64decode(data + b'=' * (-len(data) % 4))


def mask(line: bytes) -> bytes:
    def one(m):
        try:
            payload = b64url_decode(m.group(1))
            json.loads(payload)
        except Exception:
            # Not one of ours after all: keep it (a diff will show it).
            return m.group(0)
        payload = EXPIRY.sub(b'"e":"<EXPIRY>"', payload)
        return b'<STATE payload=' + payload + b' mac=<MAC>>'
    return SEALED.sub(one, line)


def show(raw: bytes) -> str:
    return raw.decode('utf-8', errors='backslashreplace')


def same_id(a, b) -> bool:
    """JSON ids compared by type and value (1 != "1", 1 != true)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


class Server:
    def __init__(self, argv, stderr_path):
        self.stderr_file = open(stderr_path, 'wb') if stderr_path else subprocess.DEVNULL
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE,
                                     stderr=self.stderr_file, bufsize=0)
        self.lines = queue.Queue()
        t = threading.Thread(target=self._read, daemon=True)
        t.start()

    def _read(self):
        out = self.proc.stdout
        buf = b''
        while True:
            chunk = out.read1(65536) if hasattr(out, 'read1') else os.read(out.fileno(), 65536)
            if not chunk:
                break
            buf += chunk
            while True:
                nl = buf.find(b'\n')
                if nl < 0:
                    break
                self.lines.put((buf[:nl], True))
                buf = buf[nl + 1:]
        if buf:
            self.lines.put((buf, False))
        self.lines.put(None)

    def send(self, data: bytes):
        self.proc.stdin.write(data + b'\n')
        self.proc.stdin.flush()

    def get(self, timeout):
        try:
            return self.lines.get(timeout=max(timeout, 0))
        except queue.Empty:
            return 'timeout'


class Harness:
    def __init__(self, server, out):
        self.server = server
        self.out = out
        self.state = None          # raw text of the last requestState
        self.asks = []             # (method, id) of server requests, in order
        self.pending = []          # ids of requests awaiting their reply
        self.eof = False
        self.pad = 0               # for the next line's $PAD

    def w(self, text):
        self.out.write(text + '\n')

    # --- output -----------------------------------------------------------

    def record(self, item):
        """Records one output line; returns its parsed JSON (or None)."""
        raw, newline = item
        prefix = '<< ' if newline else '<<(no newline) '
        self.w(prefix + show(mask(raw)))
        try:
            msg = json.loads(raw)
        except Exception:
            return None
        if not isinstance(msg, dict):
            return None
        self._learn(raw, msg)
        return msg

    def _learn(self, raw, msg):
        res = msg.get('result')
        if isinstance(res, dict) and isinstance(res.get('requestState'), str):
            self.state = res['requestState']
        if 'method' in msg and 'id' in msg:
            self.asks.append((msg['method'], msg['id']))
        if 'method' not in msg and ('result' in msg or 'error' in msg) and 'id' in msg:
            self.pending = [p for p in self.pending if not same_id(p, msg['id'])]

    def collect_for(self, seconds):
        end = time.monotonic() + seconds
        while not self.eof:
            item = self.server.get(end - time.monotonic())
            if item == 'timeout':
                return
            if item is None:
                self.eof = True
                self.w('!! the server closed its output')
                return
            self.record(item)

    def quiet(self, seconds):
        """Collects until no line came for `seconds`."""
        while not self.eof:
            item = self.server.get(seconds)
            if item == 'timeout':
                return
            if item is None:
                self.eof = True
                self.w('!! the server closed its output')
                return
            self.record(item)

    def wait_until(self, done, timeout, note_timeout=True):
        """Collects until done(msg) for some line; then a quiet period."""
        end = time.monotonic() + timeout
        while not self.eof:
            item = self.server.get(end - time.monotonic())
            if item == 'timeout':
                if note_timeout:
                    self.w('!! no reply within %gs' % timeout)
                return
            if item is None:
                self.eof = True
                self.w('!! the server closed its output')
                return
            msg = self.record(item)
            if msg is not None:
                verdict = done(msg)
                if verdict:
                    self.quiet((ASK_QUIET_MS if verdict == 'ask' else QUIET_MS) / 1000)
                    return

    # --- input ------------------------------------------------------------

    def expand(self, text: bytes) -> bytes:
        if self.pad:
            text = text.replace(b'$PAD', b'x' * self.pad)
            self.pad = 0
        def ask_id(m):
            method = m.group(1).decode() if m.group(1) else None
            for meth, ident in reversed(self.asks):
                if method is None or meth == method:
                    return json.dumps(ident).encode()
            self.w('!! no server request to answer for ' + show(m.group(0)))
            return b'null'
        text = re.sub(rb'"\$ASK_ID(?::([^"]+))?"', ask_id, text)
        if b'$STATE' in text:
            if self.state is None:
                self.w('!! no requestState seen yet')
            text = text.replace(b'$STATE', (self.state or '').encode())
        return text

    def run_line(self, raw: bytes, shown: str, mode):
        self.w('>> ' + shown)
        if self.eof:
            self.w('!! not sent: the server is gone')
            return
        data = self.expand(raw)
        try:
            self.server.send(data)
        except (BrokenPipeError, OSError) as e:
            self.w('!! send failed: %s' % e.__class__.__name__)
            return
        if mode is not None:
            self.collect_for(mode)
            return
        try:
            msg = json.loads(data)
        except Exception:
            msg = None
        if isinstance(msg, dict) and 'method' in msg and 'id' not in msg:
            if msg.get('method') == 'notifications/cancelled' and isinstance(msg.get('params'), dict):
                rid = msg['params'].get('requestId')
                self.pending = [p for p in self.pending if not same_id(p, rid)]
            self.collect_for(FIXED_MS / 1000)
            return
        if isinstance(msg, dict) and 'method' not in msg and ('result' in msg or 'error' in msg):
            waiting = list(self.pending)

            def answered(m):
                if 'method' in m and 'id' in m:
                    return 'ask'
                if 'method' not in m and 'id' in m and any(same_id(p, m['id']) for p in waiting):
                    return 'reply'
                return None
            if not self.pending:
                self.collect_for(FIXED_MS / 1000)
            else:
                self.wait_until(answered, ANSWER_TIMEOUT, note_timeout=False)
            return
        has_id = isinstance(msg, dict) and 'id' in msg
        ident = msg.get('id') if has_id else None
        listen = isinstance(msg, dict) and msg.get('method') == 'subscriptions/listen'
        if isinstance(msg, dict) and 'method' in msg and has_id:
            self.pending.append(ident)

        def done(m):
            if 'method' not in m and ('result' in m or 'error' in m):
                rid = m.get('id')
                if rid is None or (has_id and same_id(rid, ident)):
                    if has_id:
                        self.pending = [p for p in self.pending if not same_id(p, ident)]
                    return 'reply'
                return None
            if 'method' in m and 'id' in m:
                return 'ask'
            if listen and has_id:
                try:
                    sub = m['params']['_meta']['io.modelcontextprotocol/subscriptionId']
                except (KeyError, TypeError):
                    return None
                if m.get('method') == 'notifications/subscriptions/acknowledged' and same_id(sub, ident):
                    return 'reply'
            return None
        self.wait_until(done, REPLY_TIMEOUT)

    def run(self, corpus: bytes):
        mode = None
        for raw in corpus.split(b'\n'):
            if raw == b'':
                continue
            if raw.startswith(b'#!'):
                words = raw[2:].decode().strip().split(None, 1)
                cmd = words[0]
                arg = words[1] if len(words) > 1 else ''
                if cmd == 'nowait':
                    mode = FIXED_MS / 1000
                elif cmd == 'wait':
                    mode = int(arg) / 1000
                elif cmd == 'pad':
                    self.pad = int(arg)
                elif cmd == 'sleep':
                    self.w('## ' + raw.decode())
                    self.collect_for(int(arg) / 1000)
                elif cmd == 'hex':
                    data = bytes.fromhex(arg)
                    self.run_line(data, raw.decode(), mode if mode is not None else None)
                    mode = None
                else:
                    raise SystemExit('unknown directive: %r' % raw)
                continue
            if raw.startswith(b'#'):
                self.w('## ' + raw[1:].decode().strip())
                continue
            self.run_line(raw, show(raw), mode)
            mode = None

    def finish(self):
        self.w('== eof')
        try:
            self.server.proc.stdin.close()
        except OSError:
            pass
        end = time.monotonic() + EXIT_TIMEOUT
        while not self.eof:
            item = self.server.get(end - time.monotonic())
            if item == 'timeout':
                self.w('!! the server did not close its output within %gs' % EXIT_TIMEOUT)
                self.server.proc.kill()
                break
            if item is None:
                self.eof = True
                break
            self.record(item)
        try:
            code = self.server.proc.wait(timeout=EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.server.proc.kill()
            code = self.server.proc.wait()
            self.w('!! killed: the server did not exit')
        self.w('== exit %d' % code)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--out', help='transcript file (default: stdout)')
    ap.add_argument('--stderr', help="file for the server's stderr (not part of the transcript)")
    ap.add_argument('server_cmd')
    ap.add_argument('corpus')
    args = ap.parse_args()
    with open(args.corpus, 'rb') as f:
        corpus = f.read()
    out = open(args.out, 'w', encoding='utf-8', newline='\n') if args.out else sys.stdout
    server = Server(shlex.split(args.server_cmd), args.stderr)
    h = Harness(server, out)
    try:
        h.run(corpus)
        h.finish()
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
        if out is not sys.stdout:
            out.close()


if __name__ == '__main__':
    main()

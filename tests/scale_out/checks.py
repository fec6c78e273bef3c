#!/usr/bin/env python3
"""The scale-out checks (tests/scale_out.sh starts everything and runs this
with the venv's python): the Python SDK's HTTP client, and plain HTTP where a
check needs to hold the wire, against three replicas behind nginx.

Prints one line per check (`pass NAME: detail` or `FAIL NAME: why`) and exits
1 when one failed.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import signal
import sys
import time

import anyio
import httpx2 as httpx
import mcp_types as types
from mcp import Client
from mcp.client.subscriptions import ResourceUpdated, ToolsListChanged

ERA = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": ERA,
    "io.modelcontextprotocol/clientCapabilities": {
        "elicitation": {"form": {}},
        "extensions": {"io.modelcontextprotocol/tasks": {}},
    },
}


class Failed(Exception):
    pass


def expect(ok: bool, why: str) -> None:
    if not ok:
        raise Failed(why)


def texts(result: types.CallToolResult) -> list[str]:
    return [b.text for b in result.content if isinstance(b, types.TextContent)]


def served_by(access_log: str, since: int, method: str) -> list[tuple[str, str]]:
    """(upstream, status) of each POST of `method` logged after line `since`."""
    with open(access_log) as f:
        lines = f.read().splitlines()[since:]
    out = []
    for line in lines:
        parts = line.split()
        if len(parts) >= 3 and parts[2] == method:
            out.append((parts[0], parts[1]))
    return out


def log_length(access_log: str) -> int:
    try:
        with open(access_log) as f:
            return len(f.read().splitlines())
    except FileNotFoundError:
        return 0


def post(url: str, method: str, params: dict, name: str | None = None, rid: int = 1, timeout: float = 30):
    """One modern POST with the headers a conforming client sends; the JSON-RPC answer."""
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": ERA,
        "Mcp-Method": method,
    }
    if name is None and method.startswith("tasks/"):
        name = params.get("taskId")
    if name is not None:
        headers["Mcp-Name"] = name
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": {**params, "_meta": META}}
    response = httpx.post(url, headers=headers, json=body, timeout=timeout)
    return response, answer_of(response)


def answer_of(response: httpx.Response):
    """The JSON-RPC response in a JSON or event-stream body (None when there is none)."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        answer = None
        for line in response.text.splitlines():
            if line.startswith("data:"):
                message = json.loads(line[5:])
                if "id" in message and ("result" in message or "error" in message):
                    answer = message
        return answer
    try:
        return response.json()
    except ValueError:
        return None


async def check_mrtr_across_replicas(args) -> str:
    since = log_length(args.access_log)
    asked = []

    async def elicit(context, params):
        asked.append(params)
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async with Client(args.url, elicitation_callback=elicit) as client:
        result = await client.call_tool("ask", {})
    expect(len(asked) == 1, f"{len(asked)} elicitations")
    expect(any("Ada" in t for t in texts(result)), f"final text {texts(result)!r}")
    rounds = served_by(args.access_log, since, "tools/call")
    expect(len(rounds) == 2, f"expected 2 rounds in the access log, saw {rounds}")
    expect(rounds[0][0] != rounds[1][0], f"both rounds on {rounds[0][0]}: round robin did not spread them")
    return f"round 1 on {rounds[0][0]}, round 2 on {rounds[1][0]}: {texts(result)[0]!r}"


def check_foreign_state_refused(args) -> str:
    _, first = post(args.url, "tools/call", {"name": "ask", "arguments": {}}, name="ask")
    result = (first or {}).get("result", {})
    expect(result.get("resultType") == "input_required", f"not input_required: {first}")
    state = result.get("requestState")
    expect(isinstance(state, str) and state, f"no requestState: {result}")
    keys = list(result.get("inputRequests", {}))
    expect(keys, f"no inputRequests: {result}")
    retry = {
        "name": "ask",
        "arguments": {},
        "requestState": state,
        "inputResponses": {k: {"action": "accept", "content": {"name": "Ada"}} for k in keys},
    }
    _, refused = post(args.stranger, "tools/call", retry, name="ask", rid=2)
    expect(refused is not None and "error" in refused, f"a state sealed by another key was accepted: {refused}")
    _, accepted = post(args.url, "tools/call", retry, name="ask", rid=3)
    text = ((accepted or {}).get("result", {}).get("content") or [{}])[0].get("text", "")
    expect("Ada" in text, f"the same retry through the replicas failed: {accepted}")
    return f"stranger: {refused['error']['code']} {refused['error']['message']!r}; replicas: {text!r}"


async def events_of(sub, wanted, count: int, within: float = 10.0) -> list:
    """The next `count` events `wanted` picks (fewer if they did not come `within`)."""
    seen = []
    with anyio.move_on_after(within):
        async for event in sub:
            if wanted(event):
                seen.append(event)
                if len(seen) == count:
                    break
    return seen


async def check_listen_across_replicas(args) -> str:
    replicas = [f"http://127.0.0.1:{port}/mcp" for port in args.replicas.split(",")]
    rid = iter(range(1000, 2000))
    async with Client(args.url) as listener:
        async with listener.listen(
            tools_list_changed=True, resource_subscriptions=["mem://counter"]
        ) as sub:
            expect(sub.honored.tools_list_changed is True, f"ack honored {sub.honored!r}")
            # The change happens on each replica in turn, each heard before
            # the next (the SDK may fold notifications that arrive together):
            # the listen's own replica tells it directly, the others only
            # through the feed.
            changed, updated = [], []
            for url in replicas:
                for tool, wanted, heard in [
                    ("toggle_tool", lambda e: isinstance(e, ToolsListChanged), changed),
                    ("bump", lambda e: isinstance(e, ResourceUpdated) and e.uri == "mem://counter", updated),
                ]:
                    params = {"name": tool, "arguments": {}}
                    response, answer = await anyio.to_thread.run_sync(
                        lambda: post(url, "tools/call", params, tool, next(rid))
                    )
                    expect(answer is not None and "result" in answer, f"{tool} on {url}: {response.status_code} {answer}")
                    event = await events_of(sub, wanted, 1, within=5.0)
                    expect(len(event) == 1, f"{tool} on {url}: the listen heard {event}")
                    heard.append(url)
    # Each replica changes its list back.
    for url in replicas:
        post(url, "tools/call", {"name": "toggle_tool", "arguments": {}}, "toggle_tool", next(rid))
    expect(len(changed) == 3, f"{len(changed)} tool-list changes for 3 toggles: {changed}")
    expect(len(updated) == 3, f"{len(updated)} resource updates for 3 bumps: {updated}")
    listens = served_by(args.access_log, 0, "subscriptions/listen")
    return f"the listen on {listens[-1][0] if listens else '?'} heard 3 list changes and 3 updates, one from each replica"


def replica_urls(args) -> list[str]:
    return [f"http://127.0.0.1:{port}/mcp" for port in args.replicas.split(",")]


def task_status(url: str, task_id: str, rid: int) -> dict:
    _, answer = post(url, "tasks/get", {"taskId": task_id}, rid=rid)
    expect(answer is not None and "result" in answer, f"tasks/get {task_id} on {url}: {answer}")
    return answer["result"]


def poll_task(url: str, task_id: str, until: set[str], within: float = 15.0) -> dict:
    deadline = time.monotonic() + within
    rid = 3000
    while True:
        rid += 1
        task = task_status(url, task_id, rid)
        if task["status"] in until:
            return task
        expect(time.monotonic() < deadline, f"task {task_id} still {task['status']} on {url} after {within} s")
        time.sleep(0.1)


def start_task(url: str, tool: str, arguments: dict, rid: int) -> str:
    _, answer = post(url, "tools/call", {"name": tool, "arguments": arguments}, name=tool, rid=rid)
    task_id = ((answer or {}).get("result") or {}).get("taskId")
    expect(task_id, f"{tool} on {url} created no task: {answer}")
    return task_id


def check_tasks_across_replicas(args) -> str:
    """A task runs on replica 0; replica 1 polls it, replica 2 answers it, then cancels another."""
    runs, polls, answers = replica_urls(args)
    task_id = start_task(runs, "confirm_delete", {"filename": "across.txt"}, 4001)
    waiting = poll_task(polls, task_id, {"input_required"})
    keys = list(waiting.get("inputRequests", {}))
    expect(keys == ["confirm"], f"inputRequests {waiting}")
    _, ack = post(answers, "tasks/update", {
        "taskId": task_id,
        "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": True}}},
    }, rid=4002)
    expect(ack is not None and "result" in ack, f"tasks/update: {ack}")
    done = poll_task(polls, task_id, {"completed", "failed", "cancelled"})
    text = (done.get("result", {}).get("content") or [{}])[0].get("text")
    expect(done["status"] == "completed" and text == "Deleted across.txt", f"after the answer: {done}")
    # Another, cancelled through the third replica: the handler on the first stops.
    other = start_task(runs, "confirm_delete", {"filename": "kept.txt"}, 4003)
    poll_task(polls, other, {"input_required"})
    _, ack = post(answers, "tasks/cancel", {"taskId": other}, rid=4004)
    expect(ack is not None and "result" in ack, f"tasks/cancel: {ack}")
    time.sleep(0.5)
    cancelled = task_status(runs, other, 4005)
    expect(cancelled["status"] == "cancelled", f"after the cancel: {cancelled}")
    return f"task {task_id[:8]}… run on one replica, polled on a second, answered on a third: {text!r}; another cancelled there"


async def check_killed_replica(args) -> str:
    pids = [int(p) for p in args.replica_pids.split(",")]
    victim_port = args.replicas.split(",")[1]
    since = log_length(args.access_log)
    outcomes: dict[int, str] = {}

    async def slow(n: int) -> None:
        params = {"name": "slow", "arguments": {"ms": 3000}}
        try:
            response, answer = await anyio.to_thread.run_sync(
                lambda: post(args.url, "tools/call", params, name="slow", rid=100 + n)
            )
            if answer and "result" in answer:
                outcomes[n] = "done: " + answer["result"]["content"][0]["text"]
            else:
                outcomes[n] = f"failed: HTTP {response.status_code}"
        except httpx.HTTPError as e:
            outcomes[n] = f"failed: {type(e).__name__}"

    victim_url = f"http://127.0.0.1:{victim_port}/mcp"
    orphan = start_task(victim_url, "slow_compute", {"seconds": 120}, 5001)
    async with anyio.create_task_group() as group:
        for n in range(3):
            group.start_soon(slow, n)
            # In order, so that round robin gives one to each replica.
            await anyio.sleep(0.1)
        await anyio.sleep(0.5)
        os.kill(pids[1], signal.SIGKILL)
    failed = [o for o in outcomes.values() if o.startswith("failed")]
    done = [o for o in outcomes.values() if o.startswith("done")]
    expect(len(failed) == 1 and len(done) == 2, f"outcomes {outcomes}")
    calls = served_by(args.access_log, since, "tools/call")
    dead = [c for c in calls if c[0].endswith(f":{victim_port}")]
    expect(dead and dead[0][1] != "200", f"the killed replica's call is not the failed one: {calls}")
    # The task the killed replica ran reads failed on another within its lease (10 s).
    killed_at = time.monotonic()
    survivor = f"http://127.0.0.1:{args.replicas.split(',')[0]}/mcp"
    orphaned = await anyio.to_thread.run_sync(lambda: poll_task(survivor, orphan, {"failed", "completed", "cancelled"}, 15.0))
    expect(orphaned["status"] == "failed", f"the dead replica's task: {orphaned}")
    failed_after = time.monotonic() - killed_at
    # Later calls go to the replicas left.
    started = time.monotonic()
    async with Client(args.url) as client:
        for i in range(6):
            result = await client.call_tool("echo", {"text": f"after {i}"})
            expect(texts(result) == [f"after {i}"], f"call {i} after the kill: {texts(result)}")
    return (
        f"in flight: {sorted(outcomes.values())}; its task read failed {failed_after:.1f} s later "
        f"({orphaned.get('statusMessage', '')!r}); then 6 calls served by the two left "
        f"in {time.monotonic() - started:.2f} s"
    )


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--access-log", required=True)
    parser.add_argument("--stranger", required=True)
    parser.add_argument("--replicas", required=True)
    parser.add_argument("--replica-pids", required=True)
    args = parser.parse_args()
    checks = [
        ("mrtr.across_replicas", check_mrtr_across_replicas),
        ("mrtr.foreign_state_refused", check_foreign_state_refused),
        ("listen.across_replicas", check_listen_across_replicas),
        ("tasks.across_replicas", check_tasks_across_replicas),
        # Last: it kills a replica.
        ("replica.killed", check_killed_replica),
    ]
    failures = 0
    for name, check in checks:
        try:
            if inspect.iscoroutinefunction(check):
                detail = await check(args)
            else:
                detail = check(args)
            print(f"pass {name}: {detail}", flush=True)
        except Exception as e:  # a failed check, whatever raised it
            failures += 1
            while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
                e = e.exceptions[0]
            print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))

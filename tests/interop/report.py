"""Prints the interop matrix from the drivers' JSON lines (see run.sh).

    python3 tests/interop/report.py target/interop [--readme]

Reads <dir>/results/<row>.jsonl (one {"check", "status", "detail"} per
line) and <row>.status (the driver's exit code). A `fail` listed in
expected-failures.txt becomes `xfail`; a listed check that passes is a
failure too (the entry is stale). A driver that crashed, timed out or left
out a check of CHECKS.md fails the run. Writes <dir>/works-with.md and, with
--readme, puts that table into README.md between its markers.
"""

import json
import pathlib
import re
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent

# The rows of the matrix: (name, peer, version, direction).
ROWS = [
    ("python-client", "Python SDK (`mcp`)", "2.3.0", "their client → our server"),
    ("ts-client", "TypeScript SDK (`@modelcontextprotocol/client`)", "2.4.0", "their client → our server"),
    ("python-legacy-client", "Python SDK (`mcp`, initialize era)", "1.30.0", "their client → our server"),
    ("python-server", "Python SDK (`mcp`)", "2.3.0", "our client → their server"),
    ("ts-server", "TypeScript SDK (`@modelcontextprotocol/server`)", "2.4.0", "our client → their server"),
    ("rmcp-server", "Rust SDK (`rmcp`)", "3.11.0", "our client → their server"),
    ("python-legacy-server", "Python SDK (`mcp`, initialize era)", "1.30.0", "our client → their server"),
    ("python-http-client", "Python SDK (`mcp`), Streamable HTTP", "2.3.0", "their client → our HTTP server"),
    ("python-legacy-http-client", "Python SDK (`mcp`, initialize era), Streamable HTTP", "1.30.0", "their client → our HTTP server"),
    ("ts-http-client", "TypeScript SDK (`@modelcontextprotocol/client`), Streamable HTTP", "2.4.0", "their client → our HTTP server"),
    ("ts-legacy-http-client", "TypeScript SDK (`@modelcontextprotocol/client`, initialize era), Streamable HTTP", "2.4.0", "their client → our HTTP server"),
    ("inspector-http-client", "MCP Inspector CLI (`@modelcontextprotocol/inspector`), Streamable HTTP", "2.12.0", "their client → our HTTP server"),
    ("inspector-legacy-http-client", "MCP Inspector CLI (initialize era), Streamable HTTP", "2.12.0", "their client → our HTTP server"),
]

SHORT = {
    "python-client": "py→us",
    "ts-client": "ts→us",
    "python-legacy-client": "py1→us",
    "python-server": "us→py",
    "ts-server": "us→ts",
    "rmcp-server": "us→rmcp",
    "python-legacy-server": "us→py1",
    "python-http-client": "py⇢us",
    "python-legacy-http-client": "py1⇢us",
    "ts-http-client": "ts⇢us",
    "ts-legacy-http-client": "ts1⇢us",
    "inspector-http-client": "insp⇢us",
    "inspector-legacy-http-client": "insp1⇢us",
}


def checks_of_contract():
    """The check names of CHECKS.md's "The checks" table, in order."""
    text = (HERE / "CHECKS.md").read_text()
    section = text.split("## The checks", 1)[1]
    return re.findall(r"^\| `([a-z._]+)` \|", section, re.M)


def expected_failures():
    """{(row, check): reason} from expected-failures.txt."""
    expected = {}
    path = HERE / "expected-failures.txt"
    for line in path.read_text().splitlines() if path.exists() else []:
        line = line.strip()
        if line and not line.startswith("#"):
            row, check, reason = line.split(None, 2)
            expected[(row, check)] = reason
    return expected


def load(out, row, contract, expected):
    """The verdicts of one row: {check: (status, detail)}, and problems."""
    verdicts, problems = {}, []
    path = out / "results" / f"{row}.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    for line in lines:
        try:
            item = json.loads(line)
            verdicts[item["check"]] = (item["status"], item.get("detail", ""))
        except (ValueError, KeyError):
            problems.append(f"not a check line: {line[:120]}")
    status_path = out / "results" / f"{row}.status"
    code = status_path.read_text().strip() if status_path.exists() else "missing"
    for check in contract:
        if check not in verdicts:
            problems.append(f"{check}: no verdict (driver exit {code})")
    if code == "124":
        problems.append("the driver timed out")
    for (erow, check), reason in expected.items():
        if erow != row or check not in verdicts:
            continue
        status, detail = verdicts[check]
        if status == "fail":
            verdicts[check] = ("xfail", f"{reason}: {detail}")
        elif status == "pass":
            verdicts[check] = ("fail", f"expected to fail ({reason}) but passed: remove the entry")
    return verdicts, problems


def summary(verdicts):
    counts = {}
    for status, _ in verdicts.values():
        counts[status] = counts.get(status, 0) + 1
    order = ["pass", "xfail", "skip", "fail"]
    return ", ".join(f"{counts[s]} {s}" for s in order if s in counts)


def main():
    out = pathlib.Path(sys.argv[1])
    readme = "--readme" in sys.argv[2:]
    contract = checks_of_contract()
    expected = expected_failures()
    rows = [(r, load(out, r[0], contract, expected)) for r in ROWS]

    width = max(len(c) for c in contract) + 2
    print("\n" + "check".ljust(width) + "".join(SHORT[r[0]].ljust(9) for r, _ in rows))
    for check in contract:
        cells = "".join(v.get(check, ("-", ""))[0].ljust(9) for _, (v, _) in rows)
        print(check.ljust(width) + cells)

    failed = False
    print()
    for (row, *_), (verdicts, problems) in rows:
        for check in contract:
            status, detail = verdicts.get(check, ("missing", ""))
            if status in ("fail", "xfail", "skip"):
                print(f"{SHORT[row]:8} {check}: {status}: {detail}")
            failed |= status == "fail"
        for problem in problems:
            print(f"{SHORT[row]:8} {problem}")
            failed = True

    table = ["| Peer | Version | Direction | Result |", "|---|---|---|---|"]
    for (row, peer, version, direction), (verdicts, problems) in rows:
        result = summary(verdicts) + ("; driver problems" if problems else "")
        table.append(f"| {peer} | {version} | {direction} | {result} |")
    table = "\n".join(table) + "\n"
    (out / "works-with.md").write_text(table)
    print("\n" + table)
    if readme:
        path = ROOT / "README.md"
        text = path.read_text()
        start, end = "<!-- works-with:start -->\n", "<!-- works-with:end -->"
        if start not in text or end not in text:
            sys.exit("README.md has no works-with markers")
        head, rest = text.split(start, 1)
        path.write_text(head + start + table + end + rest.split(end, 1)[1])
        print("README.md: Works with table updated")
    print("interop: " + ("FAILED" if failed else "all checks pass (or documented)"))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

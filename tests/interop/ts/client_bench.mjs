#!/usr/bin/env node
// The client benchmark's TypeScript SDK client (v2, 2026-07-28 era).
//
//   node tests/interop/ts/client_bench.mjs <server command> [args...]
//
// Measures what `examples/clientbench` measures for its built-in clients and
// prints the same JSON object on one line: 1,000 warm-up calls, 5,000
// sequential calls (p50, p99 in µs), 20,000 calls from 1, 8 and 64
// concurrent callers sharing the one client (calls/s), the process's CPU
// time over those per call (µs), and its peak RSS (VmHWM, KiB).
// CLIENTBENCH_QUICK=1: tiny counts. Every reply's text is checked.
// Packages come from the interop npm prefix (see load.mjs).

import { readFileSync } from 'node:fs';
import { importPkg } from './load.mjs';

const { Client } = await importPkg('@modelcontextprotocol/client');
const { StdioClientTransport } = await importPkg('@modelcontextprotocol/client', './stdio');

const QUICK = Boolean(process.env.CLIENTBENCH_QUICK);
const [WARMUP, SEQUENTIAL, THROUGHPUT] = QUICK ? [10, 50, 640] : [1000, 5000, 20000];

const text = n => `${String(n).padStart(10)}-abcdefghijklmnopqrstu`;
const cpuUs = () => {
    const usage = process.cpuUsage();
    return usage.user + usage.system;
};
const vmHwmKib = () => {
    const line = readFileSync('/proc/self/status', 'utf8').split('\n').find(l => l.startsWith('VmHWM:'));
    return line ? Number(line.split(/\s+/)[1]) : 0;
};
const percentile = (values, p) => {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.round((sorted.length - 1) * p))];
};

const [command, ...args] = process.argv.slice(2);
if (!command) {
    console.error('usage: client_bench.mjs <server command> [args...]');
    process.exit(2);
}
const client = new Client({ name: 'clientbench-ts', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
await client.connect(new StdioClientTransport({ command, args, stderr: 'inherit' }), { timeout: 10000 });

async function call(n) {
    const result = await client.callTool({ name: 'echo', arguments: { text: text(n) } });
    if (result.content[0].text !== text(n)) {
        throw new Error(`wrong reply to call ${n}: ${JSON.stringify(result)}`);
    }
}

const latencies = [];
for (let i = 0; i < WARMUP + SEQUENTIAL; i++) {
    const started = process.hrtime.bigint();
    await call(i);
    if (i >= WARMUP) latencies.push(Number(process.hrtime.bigint() - started) / 1000);
}
const cpuBefore = cpuUs();
const tput = [];
for (const threads of [1, 8, 64]) {
    const perTask = Math.floor(THROUGHPUT / threads);
    const started = process.hrtime.bigint();
    await Promise.all(
        Array.from({ length: threads }, async (_, t) => {
            for (let i = 0; i < perTask; i++) await call(t * perTask + i);
        })
    );
    tput.push((perTask * threads) / (Number(process.hrtime.bigint() - started) / 1e9));
}
const cpu = cpuUs() - cpuBefore;
await client.close();
console.log(
    JSON.stringify({
        seq_p50_us: percentile(latencies, 0.5),
        seq_p99_us: percentile(latencies, 0.99),
        tput_1: tput[0],
        tput_8: tput[1],
        tput_64: tput[2],
        cpu_us_per_call: cpu / (3 * THROUGHPUT),
        rss_kib: vmHwmKib()
    })
);
process.exit(0);

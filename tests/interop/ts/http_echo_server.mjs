#!/usr/bin/env node
// An echo tool served over Streamable HTTP with the TypeScript SDK v2's
// `createMcpHandler` (2026-07-28, and 2025-era requests through its
// stateless legacy fallback) on plain `node:http`, for our HTTP client
// (tests/interop/http-client.sh):
//
//   node tests/interop/ts/http_echo_server.mjs PORT
//
// The handler is web-standard (`fetch(Request) → Response`); the few lines
// below turn a node request into a `Request` and stream the `Response`
// back, which is what `@modelcontextprotocol/node`'s `toNodeHandler` does.

import http from 'node:http';
import { importPkg } from './load.mjs';

const { McpServer, createMcpHandler } = await importPkg('@modelcontextprotocol/server');
const { z } = await importPkg('zod');

const handler = createMcpHandler(() => {
    const server = new McpServer({ name: 'ts-http-echo', version: '1.0.0' });
    server.registerTool(
        'echo',
        { description: 'Returns its text unchanged.', inputSchema: z.object({ text: z.string() }) },
        ({ text }) => ({ content: [{ type: 'text', text }] })
    );
    return server;
});

const port = Number(process.argv[2]);
http.createServer(async (req, res) => {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const body = chunks.length ? Buffer.concat(chunks) : undefined;
    const request = new Request(`http://127.0.0.1:${port}${req.url}`, {
        method: req.method,
        headers: req.headers,
        body: req.method === 'GET' || req.method === 'HEAD' ? undefined : body
    });
    const response = await handler.fetch(request);
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (response.body) {
        for await (const chunk of response.body) res.write(chunk);
    }
    res.end();
}).listen(port, '127.0.0.1', () => process.stderr.write(`[ts http] http://127.0.0.1:${port}/mcp\n`));

#!/usr/bin/env node
// Fixture server of tests/interop/CHECKS.md ("Fixture servers") on the
// TypeScript SDK v2 server API: McpServer, served over stdio by
// `serveStdio`, which picks the era per connection (a `server/discover` /
// 2026-07-28 `_meta` opening gets a modern instance and the SDK's own
// `subscriptions/listen` router; an `initialize` opening gets a 2025-era
// instance) from the same factory.
//
//   node tests/interop/ts/server.mjs
//
// Packages are resolved from the interop npm prefix, not from here: see
// load.mjs ($INTEROP_NODE_MODULES, default
// <repo>/target/interop/npm/node_modules). Diagnostics go to stderr only.
//
// Every fixture of the table is expressed; the only extra code beyond
// McpServer is the 2025-era `resources/subscribe` / `resources/unsubscribe`
// pair (McpServer has no API for it: on 2026-07-28 `subscriptions/listen`
// replaces it and serveStdio serves that itself), registered on the
// low-level Server of a legacy instance only.

import { importPkg } from './load.mjs';

const { McpServer, ResourceTemplate, completable, inputRequired, acceptedContent } = await importPkg('@modelcontextprotocol/server');
const { serveStdio } = await importPkg('@modelcontextprotocol/server', './stdio');
const { z } = await importPkg('zod');

/** A 1×1 PNG. */
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
const NAMES = ['Alice', 'Bob', 'Carol'];
const COUNTER_URI = 'mem://counter';

const log = message => process.stderr.write(`[ts server] ${message}\n`);

/** Process-wide state behind `mem://counter` (one connection per process on stdio). */
let counter = 0;

const text = value => ({ content: [{ type: 'text', text: String(value) }] });

/** Waits `ms`, or rejects as soon as `signal` aborts. */
function sleep(ms, signal) {
    return new Promise((resolve, reject) => {
        if (signal.aborted) return reject(signal.reason ?? new Error('cancelled'));
        const timer = setTimeout(() => {
            signal.removeEventListener('abort', onAbort);
            resolve();
        }, ms);
        const onAbort = () => {
            clearTimeout(timer);
            reject(signal.reason ?? new Error('cancelled'));
        };
        signal.addEventListener('abort', onAbort, { once: true });
    });
}

/** One McpServer with every fixture; `era` is serveStdio's verdict for the connection. */
function build({ era }) {
    const server = new McpServer(
        { name: 'mcp-interop-ts-server', version: '1.0.0' },
        {
            capabilities: {
                tools: { listChanged: true },
                resources: { subscribe: true, listChanged: true },
                prompts: { listChanged: true },
                completions: {}
            },
            instructions: 'Interop fixture server on the TypeScript SDK v2.'
        }
    );

    // 2025-era resource subscriptions (legacy instances only, see the header).
    const subscribed = new Set();
    if (era === 'legacy') {
        server.server.setRequestHandler('resources/subscribe', request => {
            subscribed.add(request.params.uri);
            return {};
        });
        server.server.setRequestHandler('resources/unsubscribe', request => {
            subscribed.delete(request.params.uri);
            return {};
        });
    }
    const announceCounter = () => {
        // Modern: serveStdio stamps it onto the listen streams that asked for it.
        if (era === 'legacy' && !subscribed.has(COUNTER_URI)) return;
        server.server.sendResourceUpdated({ uri: COUNTER_URI }).catch(error => log(`resources/updated: ${error}`));
    };

    server.registerTool(
        'echo',
        { description: 'Returns its text unchanged.', inputSchema: z.object({ text: z.string() }) },
        ({ text: value }) => text(value)
    );

    server.registerTool(
        'add',
        {
            description: 'Adds two numbers.',
            inputSchema: z.object({ a: z.number(), b: z.number() }),
            outputSchema: z.object({ sum: z.number() })
        },
        ({ a, b }) => ({ ...text(a + b), structuredContent: { sum: a + b } })
    );

    server.registerTool('test_image_content', { description: 'Returns a 1x1 PNG image.' }, () => ({
        content: [{ type: 'image', data: PNG, mimeType: 'image/png' }]
    }));

    server.registerTool('fail', { description: 'Always fails as a tool (isError: true).' }, () => ({
        ...text('the fail fixture always fails'),
        isError: true
    }));

    server.registerTool(
        'slow',
        { description: 'Waits `ms` milliseconds (cancellable), then says done.', inputSchema: z.object({ ms: z.number().int().min(0) }) },
        async ({ ms }, ctx) => {
            // A cancelled request is not answered (the SDK drops the response of an aborted handler).
            await sleep(ms, ctx.mcpReq.signal);
            return text('done');
        }
    );

    server.registerTool(
        'progress',
        {
            description: 'Reports `steps` progress notifications, then says done.',
            inputSchema: z.object({ steps: z.number().int().min(0).default(3) })
        },
        async ({ steps }, ctx) => {
            const progressToken = ctx.mcpReq._meta?.progressToken;
            if (progressToken !== undefined) {
                for (let step = 1; step <= steps; step++) {
                    await ctx.mcpReq.notify({
                        method: 'notifications/progress',
                        params: { progressToken, progress: step, total: steps, message: `step ${step} of ${steps}` }
                    });
                }
            }
            return text('done');
        }
    );

    server.registerTool('bump', { description: 'Increments the counter behind mem://counter and publishes the update.' }, () => {
        counter += 1;
        announceCounter();
        return text(counter);
    });

    // registerTool / remove() after connect announce notifications/tools/list_changed themselves.
    let ephemeral;
    server.registerTool('toggle_tool', { description: 'Adds the tool `ephemeral`, or removes it if present.' }, () => {
        if (ephemeral) {
            ephemeral.remove();
            ephemeral = undefined;
            return text('removed ephemeral');
        }
        ephemeral = server.registerTool('ephemeral', { description: 'Exists between two calls of toggle_tool.' }, () => text('ephemeral'));
        return text('added ephemeral');
    });

    // MRTR: on 2026-07-28 the client fulfils the input_required result and
    // retries; on a 2025-era connection the SDK's shim sends a real
    // elicitation/create and re-enters this handler.
    const nameSchema = z.object({ name: z.string() });
    server.registerTool('ask', { description: 'Asks the user for their name, then greets them.' }, ctx => {
        const answer = acceptedContent(ctx.mcpReq.inputResponses, 'name', nameSchema);
        if (answer?.name === undefined) {
            return inputRequired({
                inputRequests: { name: inputRequired.elicit({ message: 'What is your name?', requestedSchema: nameSchema }) }
            });
        }
        return text(`Nice to meet you, ${answer.name}!`);
    });

    server.registerResource(
        'counter',
        COUNTER_URI,
        { description: 'The counter bump increments.', mimeType: 'text/plain' },
        uri => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: String(counter) }] })
    );

    server.registerResource(
        'template',
        new ResourceTemplate('test://template/{id}/data', { list: undefined }),
        { description: 'Data for an id.', mimeType: 'application/json' },
        (uri, { id }) => ({
            contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify({ id, data: `Data for ID: ${id}` }) }]
        })
    );

    server.registerPrompt(
        'greet',
        {
            description: 'Greets someone by name.',
            argsSchema: z.object({
                name: completable(z.string().describe('Who to greet'), value => NAMES.filter(name => name.startsWith(value)))
            })
        },
        ({ name }) => ({
            messages: [{ role: 'user', content: { type: 'text', text: `Please greet ${name} warmly.` } }]
        })
    );

    return server;
}

serveStdio(build, { onerror: error => log(`error: ${error?.message ?? error}`) });

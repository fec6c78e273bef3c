#!/usr/bin/env node
// Interop check driver: the TypeScript SDK v2 client against a server.
//
//   node tests/interop/ts/client_checks.mjs <server command> [args...]
//   node tests/interop/ts/client_checks.mjs --url http://HOST:PORT/mcp [--legacy]
//
// With `--url`, the same checks run over the SDK's
// StreamableHTTPClientTransport against a running server: the 2026-07-28
// era (`versionNegotiation: 'auto'`), or with `--legacy` the SDK's default
// `initialize` era (2025-11-25, `Mcp-Session-Id` sessions), where
// `discover`, the `listen.*` checks and `mrtr.elicitation` use what that era
// has (initialize, resources/subscribe and the session's own
// notifications, elicitation/create) and `shutdown` is the session's DELETE.
//
// Spawns the server with the SDK's StdioClientTransport, connects with
// `versionNegotiation: 'auto'` (the SDK probes with `server/discover` and
// must pick the 2026-07-28 era), and runs every check of
// tests/interop/CHECKS.md ("The checks"), printing one JSON line per check
// on stdout; diagnostics go to stderr. Exit status: 0 when no check failed,
// 1 otherwise, 2 on a usage error.
//
// Packages are resolved from the interop npm prefix, not from here: see
// load.mjs ($INTEROP_NODE_MODULES, default
// <repo>/target/interop/npm/node_modules).
//
// Set INTEROP_WIRE_LOG=1 to copy every JSON-RPC message of the main
// connection to stderr (`>` sent, `<` received).

import { importPkg } from './load.mjs';

const { Client } = await importPkg('@modelcontextprotocol/client');
const { StdioClientTransport } = await importPkg('@modelcontextprotocol/client', './stdio');
const { StreamableHTTPClientTransport } = await importPkg('@modelcontextprotocol/client');

const PROTOCOL = '2026-07-28';
const LEGACY_PROTOCOL = '2025-11-25';
const CHECK_TIMEOUT_MS = 10_000;
const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';

const FIXTURE_TOOLS = ['echo', 'add', 'test_image_content', 'fail', 'slow', 'progress', 'bump', 'toggle_tool', 'ask'];
const TEMPLATE = 'test://template/{id}/data';

// ---------------------------------------------------------------------------
// Plumbing: output, timeouts, the wire tap

const results = [];

function emit(check, status, detail) {
    results.push(status);
    process.stdout.write(JSON.stringify({ check, status, detail }) + '\n');
}

function log(...parts) {
    process.stderr.write(`[ts client_checks] ${parts.join(' ')}\n`);
}

/** A check outcome other than pass or fail: `skip` (the SDK cannot express it) or `xfail` (a PEERS.md entry). */
class Outcome extends Error {
    constructor(status, detail) {
        super(detail);
        this.status = status;
    }
}
const xfail = detail => new Outcome('xfail', detail);

function assert(condition, message) {
    if (!condition) throw new Error(message);
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

function withTimeout(promise, ms, what) {
    let timer;
    const timeout = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms (${what})`)), ms);
    });
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Polls `predicate` until it holds, or fails after `ms`. */
async function until(predicate, ms, what) {
    const deadline = Date.now() + ms;
    while (!predicate()) {
        if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
        await sleep(10);
    }
}

const describe = error => {
    if (error === undefined || error === null) return String(error);
    const code = error.code !== undefined ? ` (code ${error.code})` : '';
    return `${error.name ?? 'Error'}${code}: ${error.message ?? String(error)}`;
};

const json = value => JSON.stringify(value);

/**
 * Every JSON-RPC message of a connection, in order: `{dir: '>' | '<', msg}`.
 * Observes the transport's `send` and `onmessage` (the SDK keeps working
 * unchanged); checks use it to verify what the SDK API does not expose
 * (subscription ids, cancellation notifications, request ids).
 */
class Wire {
    constructor(echo) {
        this.messages = [];
        this.echo = echo;
    }

    record(dir, msg) {
        this.messages.push({ dir, msg });
        if (this.echo) process.stderr.write(`${dir} ${JSON.stringify(msg)}\n`);
    }

    /** The index the next message will get (to look only at what follows). */
    mark() {
        return this.messages.length;
    }

    find(predicate, from = 0) {
        return this.messages.slice(from).find(({ dir, msg }) => predicate(msg, dir));
    }

    filter(predicate, from = 0) {
        return this.messages.slice(from).filter(({ dir, msg }) => predicate(msg, dir));
    }

    tap(transport) {
        const send = transport.send.bind(transport);
        transport.send = (msg, options) => {
            this.record('>', msg);
            return send(msg, options);
        };
        let handler;
        Object.defineProperty(transport, 'onmessage', {
            configurable: true,
            get: () =>
                handler &&
                ((msg, extra) => {
                    this.record('<', msg);
                    return handler(msg, extra);
                }),
            set: value => {
                handler = value;
            }
        });
        return transport;
    }
}

const sent = method => (msg, dir) => dir === '>' && msg.method === method;
const received = method => (msg, dir) => dir === '<' && msg.method === method;

function textOf(result) {
    return (result.content ?? [])
        .filter(block => block.type === 'text')
        .map(block => block.text)
        .join('');
}

// ---------------------------------------------------------------------------
// The connection

/** Elicitation requests the SDK dispatched to our handler (MRTR). */
const elicitations = [];

function newClient(era = 'modern') {
    const client = new Client(
        { name: 'mcp-interop-ts-client', version: '1.0.0' },
        {
            versionNegotiation: { mode: era === 'legacy' ? 'legacy' : 'auto' },
            capabilities: { elicitation: { form: {} } }
        }
    );
    client.onerror = error => log('client error:', describe(error));
    // MRTR: the SDK fulfils `input_required` through this same handler.
    client.setRequestHandler('elicitation/create', async request => {
        elicitations.push(request.params);
        return { action: 'accept', content: { name: 'Ada' } };
    });
    return client;
}

function newTransport(command, args, options = {}) {
    return new StdioClientTransport({ command, args, stderr: 'inherit', ...options });
}

// ---------------------------------------------------------------------------
// The checks: each gets the shared context, returns the pass detail, throws
// an Error (fail) or an Outcome (skip / xfail).

async function checkDiscover(ctx) {
    const client = newClient(ctx.era);
    const transport = ctx.wire.tap(ctx.url ? new StreamableHTTPClientTransport(new URL(ctx.url)) : newTransport(ctx.command, ctx.args));
    ctx.cleanups.push(() => transport.close()); // reaps the server even if connect never finished
    await client.connect(transport, { timeout: 8000 });
    ctx.client = client;
    ctx.transport = transport;
    if (ctx.era === 'legacy') return checkLegacyHandshake(client, transport);

    const era = client.getProtocolEra();
    const version = client.getNegotiatedProtocolVersion();
    assert(era === 'modern', `the SDK negotiated the ${era} era (version ${version}), not 2026-07-28`);
    assert(version === PROTOCOL, `negotiated ${version}, expected ${PROTOCOL}`);
    const probe = client.getDiscoverResult();
    assert(probe?.supportedVersions?.includes(PROTOCOL), `probe supportedVersions ${json(probe?.supportedVersions)}`);

    // Ask again on the session itself (the probe ran on a sibling process).
    const discovered = await client.discover({ timeout: 5000 });
    assert(discovered.supportedVersions?.includes(PROTOCOL), `server/discover supportedVersions ${json(discovered.supportedVersions)}`);
    const caps = client.getServerCapabilities() ?? {};
    const missing = [];
    if (!caps.tools?.listChanged) missing.push('tools.listChanged');
    if (!caps.resources?.subscribe) missing.push('resources.subscribe');
    if (!caps.resources?.listChanged) missing.push('resources.listChanged');
    if (!caps.prompts) missing.push('prompts');
    if (!caps.completions) missing.push('completions');
    assert(missing.length === 0, `capabilities lack ${missing.join(', ')}: ${json(caps)}`);
    const info = client.getServerVersion();
    assert(info?.name, `no serverInfo in the discover result's _meta`);
    return `era ${era} ${version}; server ${info.name} ${info.version}; capabilities ${Object.keys(caps).sort().join(',')}`;
}

/** `discover` in the initialize era: the SDK's `initialize` handshake, and the session the server assigned. */
function checkLegacyHandshake(client, transport) {
    const era = client.getProtocolEra();
    const version = client.getNegotiatedProtocolVersion();
    assert(era === 'legacy', `the SDK negotiated the ${era} era (version ${version}), not initialize`);
    assert(version === LEGACY_PROTOCOL, `negotiated ${version}, expected ${LEGACY_PROTOCOL}`);
    const caps = client.getServerCapabilities() ?? {};
    const missing = ['tools', 'resources', 'prompts', 'completions'].filter(name => !caps[name]);
    assert(missing.length === 0, `capabilities lack ${missing.join(', ')}: ${json(caps)}`);
    assert(caps.resources.subscribe, `resources.subscribe not offered: ${json(caps)}`);
    const info = client.getServerVersion();
    assert(info?.name, 'no serverInfo in the initialize result');
    assert(transport.sessionId, 'the server assigned no Mcp-Session-Id');
    return `initialize: ${info.name} ${info.version}, ${version}; session ${transport.sessionId.slice(0, 8)}…`;
}

async function checkToolsList({ client }) {
    const { tools } = await client.listTools();
    const byName = new Map(tools.map(tool => [tool.name, tool]));
    const missing = FIXTURE_TOOLS.filter(name => !byName.has(name));
    assert(missing.length === 0, `not listed: ${missing.join(', ')}`);
    const schemaless = FIXTURE_TOOLS.filter(name => byName.get(name).inputSchema?.type !== 'object');
    assert(schemaless.length === 0, `no object inputSchema: ${schemaless.join(', ')}`);
    assert(byName.get('add').outputSchema, 'add has no outputSchema');
    return `${tools.length} tools, all ${FIXTURE_TOOLS.length} fixtures with an inputSchema`;
}

async function checkCallText({ client }) {
    const input = 'héllo ✓';
    const result = await client.callTool({ name: 'echo', arguments: { text: input } });
    const text = textOf(result);
    assert(result.isError !== true, `isError: ${json(result)}`);
    assert(text === input, `echo returned ${json(text)}, sent ${json(input)}`);
    return `echo returned ${json(text)}`;
}

async function checkCallImage({ client }) {
    const result = await client.callTool({ name: 'test_image_content', arguments: {} });
    const image = (result.content ?? []).find(block => block.type === 'image');
    assert(image, `no image content: ${json(result.content)}`);
    assert(image.mimeType === 'image/png', `mimeType ${json(image.mimeType)}`);
    assert(typeof image.data === 'string' && image.data.length > 0, 'empty data');
    const bytes = Buffer.from(image.data, 'base64');
    assert(bytes.subarray(1, 4).toString('latin1') === 'PNG', 'data is not a base64 PNG');
    return `image/png, ${bytes.length} bytes`;
}

async function checkCallStructured({ client }) {
    // The SDK validates structuredContent against add's outputSchema (from the cached tools/list).
    const result = await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } });
    assert(result.isError !== true, `isError: ${json(result)}`);
    assert(result.structuredContent?.sum === 5, `structuredContent ${json(result.structuredContent)}`);
    return `structuredContent ${json(result.structuredContent)}, text ${json(textOf(result))}`;
}

async function checkCallError({ client }) {
    const result = await client.callTool({ name: 'fail', arguments: {} });
    assert(result.isError === true, `isError is ${json(result.isError)}`);
    return `isError result: ${json(textOf(result))}`;
}

async function checkCallUnknown({ client }) {
    let outcome;
    try {
        const result = await client.callTool({ name: 'no_such_tool', arguments: {} });
        assert(result.isError === true, `a plain result for an unknown tool: ${json(result)}`);
        outcome = `isError result ${json(textOf(result))}`;
    } catch (error) {
        assert(typeof error.code === 'number', `not a JSON-RPC error: ${describe(error)}`);
        outcome = `JSON-RPC error ${error.code} ${json(error.message)}`;
    }
    const after = await client.callTool({ name: 'echo', arguments: { text: 'still here' } });
    assert(textOf(after) === 'still here', `echo after it returned ${json(after)}`);
    return `${outcome}; echo works after it`;
}

async function checkResourcesList({ client }) {
    const { resources } = await client.listResources();
    const counter = resources.find(resource => resource.uri === 'mem://counter');
    assert(counter, `mem://counter not listed: ${resources.map(r => r.uri).join(', ')}`);
    return `${resources.length} resources, mem://counter ${counter.mimeType ?? '(no mimeType)'}`;
}

async function checkResourcesRead({ client }) {
    const { contents } = await client.readResource({ uri: 'mem://counter' });
    assert(contents?.length >= 1, 'no contents');
    const [first] = contents;
    assert(typeof first.text === 'string' && /^\d+$/.test(first.text), `not decimal text: ${json(first)}`);
    return `mem://counter = ${json(first.text)} (${first.mimeType})`;
}

async function checkResourcesTemplates({ client }) {
    const { resourceTemplates } = await client.listResourceTemplates();
    assert(
        resourceTemplates.some(template => template.uriTemplate === TEMPLATE),
        `${TEMPLATE} not listed: ${resourceTemplates.map(t => t.uriTemplate).join(', ')}`
    );
    const { contents } = await client.readResource({ uri: 'test://template/123/data' });
    const text = (contents ?? []).map(c => c.text ?? '').join('');
    assert(text.includes('123'), `read returned ${json(contents)}`);
    return `listed; test://template/123/data reads ${json(text)}`;
}

async function checkPromptsList({ client }) {
    const { prompts } = await client.listPrompts();
    const greet = prompts.find(prompt => prompt.name === 'greet');
    assert(greet, `greet not listed: ${prompts.map(p => p.name).join(', ')}`);
    const name = (greet.arguments ?? []).find(argument => argument.name === 'name');
    assert(name, `greet has no name argument: ${json(greet)}`);
    assert(name.required === true, `greet's name is not required: ${json(name)}`);
    return `greet listed with required argument name (${prompts.length} prompts)`;
}

async function checkPromptsGet({ client }) {
    const result = await client.getPrompt({ name: 'greet', arguments: { name: 'Ada' } });
    const message = result.messages?.[0];
    assert(message, 'no messages');
    assert(message.role === 'user', `role ${message.role}`);
    assert(message.content?.type === 'text' && message.content.text.includes('Ada'), `message ${json(message)}`);
    return `${result.messages.length} message: ${json(message.content.text)}`;
}

async function checkCompletion({ client }) {
    const result = await client.complete({
        ref: { type: 'ref/prompt', name: 'greet' },
        argument: { name: 'name', value: 'A' }
    });
    const values = result.completion?.values;
    assert(json(values) === json(['Alice']), `values ${json(values)}`);
    return `values ${json(values)}`;
}

async function checkProgress({ client, wire }) {
    const mark = wire.mark();
    const seen = [];
    const result = await client.callTool(
        { name: 'progress', arguments: { steps: 3 } },
        { onprogress: progress => seen.push(progress) }
    );
    const beforeResult = seen.length;
    assert(textOf(result) === 'done', `result ${json(result)}`);
    const request = wire.find(sent('tools/call'), mark);
    const token = request?.msg.params?._meta?.progressToken;
    assert(token !== undefined, 'the SDK sent no progressToken');
    const increasing = values => values.length > 0 && values.every((v, i) => i === 0 || v > values[i - 1]);

    // What the server put on the wire, between the request and its response.
    const start = wire.messages.indexOf(request);
    const end = wire.messages.findIndex((m, i) => i > start && m.dir === '<' && m.msg.id === request.msg.id && !m.msg.method);
    const onWire = wire.messages
        .slice(start, end)
        .filter(m => m.dir === '<' && m.msg.method === 'notifications/progress' && m.msg.params?.progressToken === token)
        .map(m => m.msg.params.progress);
    const wireOk = end > start && onWire.length === 3 && increasing(onWire);

    const values = seen.map(p => p.progress);
    if (beforeResult !== 3 && wireOk) {
        throw xfail(
            `PEERS.md "ts-sdk 2.4.0: progress that shares a read with its response is dropped": the server sent progress ` +
                `${onWire.join(',')} (token ${json(token)}) before the response, but onprogress ran ${beforeResult} times: ` +
                'Protocol dispatches notifications a microtask late while the response, handled synchronously in the same read, ' +
                'has already retired the token ("unknown token" via onerror); typescript-sdk#2580, PR #2378'
        );
    }
    assert(beforeResult === 3, `${beforeResult} progress notifications before the result: ${json(seen)}; on the wire: ${json(onWire)}`);
    assert(increasing(values), `not increasing: ${json(values)}`);
    return `token ${json(token)}: progress ${values.join(',')} of ${seen[0].total}, then ${json(textOf(result))}`;
}

async function checkCancellation(ctx) {
    const { client, wire } = ctx;
    const mark = wire.mark();
    const controller = new AbortController();
    const started = Date.now();
    const call = client.callTool({ name: 'slow', arguments: { ms: 30000 } }, { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('interop: cancel after 200 ms')), 200);
    let error;
    try {
        const result = await call;
        throw new Error(`slow was not cancelled: ${json(result)}`);
    } catch (e) {
        error = e;
    }
    const elapsed = Date.now() - started;
    assert(elapsed < 2200, `the call settled only after ${elapsed} ms`);
    const request = wire.find(sent('tools/call'), mark);
    const id = request?.msg.id;
    const cancel = wire.find(msg => msg.method === 'notifications/cancelled' && msg.params?.requestId === id, mark);
    // Over 2026-07-28 HTTP, closing the POST's response stream is the cancellation; otherwise a notification.
    const byClosing = ctx.url && ctx.era === 'modern';
    assert(byClosing || cancel?.dir === '>', `the SDK sent no notifications/cancelled for request ${id}`);

    const after = await client.callTool({ name: 'echo', arguments: { text: 'after cancel' } });
    assert(textOf(after) === 'after cancel', `echo after cancel returned ${json(after)}`);
    // The server must not answer a cancelled request (stdio binding): note it if it does.
    await sleep(300);
    const late = wire.find((msg, dir) => dir === '<' && msg.id === id && !msg.method, mark);
    const note = late ? `; NOTE the server still answered the cancelled request: ${json(late.msg)}` : '; no response for it';
    return `caller saw ${describe(error)} after ${elapsed} ms; notifications/cancelled sent for id ${id}; echo works after${note}`;
}

/**
 * Opens a listen stream for `filter`, calls `tool`, waits for `method` on
 * that stream (its notifications must carry the listen request's id as
 * subscription id), then closes the stream.
 */
async function listenFor({ client, wire }, { filter, honors, tool, method, matches }) {
    const delivered = [];
    client.setNotificationHandler(method, notification => {
        delivered.push(notification);
    });
    const mark = wire.mark();
    let subscription;
    try {
        subscription = await client.listen(filter, { timeout: 5000 });
        const listenId = wire.find(sent('subscriptions/listen'), mark)?.msg.id;
        const ack = wire.find(
            (msg, dir) => received('notifications/subscriptions/acknowledged')(msg, dir) && msg.params?._meta?.[SUBSCRIPTION_ID] === listenId,
            mark
        );
        assert(ack, `no acknowledgment carrying subscription id ${json(listenId)}`);
        assert(honors(subscription.honoredFilter), `acknowledged filter ${json(subscription.honoredFilter)} lacks ${json(filter)}`);

        const triggered = wire.mark();
        await client.callTool({ name: tool, arguments: {} });
        await until(() => delivered.some(matches), 5000, `${method} after ${tool}`);
        const onStream = wire.find(
            (msg, dir) => received(method)(msg, dir) && matches(msg) && msg.params?._meta?.[SUBSCRIPTION_ID] === listenId,
            triggered
        );
        assert(onStream, `${method} did not carry subscription id ${json(listenId)}: ${json(wire.find(received(method), triggered)?.msg)}`);

        await subscription.close();
        const closed = await withTimeout(subscription.closed, 2000, 'closing the subscription');
        return `listen ${json(listenId)} acknowledged ${json(subscription.honoredFilter)}; ${tool} delivered ${method} on it; closed (${closed})`;
    } finally {
        client.removeNotificationHandler(method);
        await subscription?.close();
    }
}

/**
 * The initialize era's spelling of a `listen.*` check: `subscribe` (a
 * resources/subscribe, or nothing for list changes), call `tool`, and wait
 * for the session's own `method` notification.
 */
async function legacyNotified({ client }, { subscribe, tool, method, matches }) {
    const delivered = [];
    client.setNotificationHandler(method, notification => {
        delivered.push(notification);
    });
    try {
        if (subscribe) await client.subscribeResource({ uri: subscribe });
        await client.callTool({ name: tool, arguments: {} });
        await until(() => delivered.some(matches), 5000, `${method} after ${tool}`);
        if (subscribe) await client.unsubscribeResource({ uri: subscribe });
        return `${subscribe ? `resources/subscribe ${subscribe}; ` : ''}${tool} delivered ${method}`;
    } finally {
        client.removeNotificationHandler(method);
    }
}

function checkListenResourceUpdated(ctx) {
    if (ctx.era === 'legacy') {
        return legacyNotified(ctx, {
            subscribe: 'mem://counter',
            tool: 'bump',
            method: 'notifications/resources/updated',
            matches: notification => notification.params?.uri === 'mem://counter'
        });
    }
    return listenFor(ctx, {
        filter: { resourceSubscriptions: ['mem://counter'] },
        honors: honored => honored?.resourceSubscriptions?.includes('mem://counter'),
        tool: 'bump',
        method: 'notifications/resources/updated',
        matches: notification => notification.params?.uri === 'mem://counter'
    });
}

async function checkListenToolsChanged(ctx) {
    if (ctx.era === 'legacy' && ctx.client.getServerCapabilities()?.tools?.listChanged !== true) {
        throw new Outcome('skip', 'the server offers no tools.listChanged to this client');
    }
    const listen = ctx.era === 'legacy' ? legacyNotified : listenFor;
    const detail = await listen(ctx, {
        filter: { toolsListChanged: true },
        honors: honored => honored?.toolsListChanged === true,
        tool: 'toggle_tool',
        method: 'notifications/tools/list_changed',
        matches: () => true
    });
    // Toggle back so the server's tool list is as it was.
    await ctx.client.callTool({ name: 'toggle_tool', arguments: {} });
    return detail;
}

/**
 * `mrtr.elicitation` in the initialize era: the server may send its own
 * elicitation/create mid-call (answered by the same handler); a server that
 * answers with a tool error instead is skipped with its reason.
 */
async function checkLegacyElicitation({ client }) {
    elicitations.length = 0;
    const result = await client.callTool({ name: 'ask', arguments: {} });
    const text = textOf(result);
    if (result.isError) throw new Outcome('skip', `the server does not ask a legacy client for input: ${json(text)}`);
    assert(elicitations.length === 1, `the elicitation handler ran ${elicitations.length} times`);
    assert(text.includes('Ada'), `final text ${json(text)}`);
    return `elicitation/create ${json(elicitations[0].message)} answered; ask returned ${json(text)}`;
}

async function checkMrtrElicitation(ctx) {
    if (ctx.era === 'legacy') return checkLegacyElicitation(ctx);
    const { client, wire } = ctx;
    const mark = wire.mark();
    elicitations.length = 0;
    // The SDK answers input_required through the elicitation/create handler and retries.
    const result = await client.callTool({ name: 'ask', arguments: {} });
    const text = textOf(result);
    assert(elicitations.length === 1, `the elicitation handler ran ${elicitations.length} times`);
    const [asked] = elicitations;
    assert((asked.mode ?? 'form') === 'form', `elicitation mode ${asked.mode}`);
    assert(asked.requestedSchema?.properties?.name?.type === 'string', `requestedSchema ${json(asked.requestedSchema)}`);
    assert(text.includes('Ada'), `final text ${json(text)}`);
    const calls = wire.filter(sent('tools/call'), mark);
    assert(calls.length === 2, `${calls.length} tools/call requests on the wire`);
    assert(calls[0].msg.id !== calls[1].msg.id, 'the retry reused the request id');
    const first = wire.find((msg, dir) => dir === '<' && msg.id === calls[0].msg.id, mark);
    assert(first?.msg.result?.resultType === 'input_required', `first answer ${json(first?.msg)}`);
    const retry = calls[1].msg.params ?? {};
    assert(retry.inputResponses && Object.keys(retry.inputResponses).length === 1, `retry inputResponses ${json(retry.inputResponses)}`);
    // MRTR: requestState is echoed byte for byte, or absent if the server sent none.
    assert(retry.requestState === first.msg.result.requestState, `retry requestState ${json(retry.requestState)} != ${json(first.msg.result.requestState)}`);
    return `input_required (${Object.keys(first.msg.result.inputRequests ?? {}).join(',')}) answered {name: "Ada"}; retry returned ${json(text)}`;
}

/**
 * Its own connection: connect, echo, close (the SDK ends stdin, waits 2 s,
 * then sends SIGTERM). The server runs under `sh`, which reports its exit
 * status on stderr, so "no error" means exit status 0 without a signal.
 */
async function checkShutdown(ctx) {
    const script = '"$@"; echo "interop-exit-status=$?" >&2';
    const transport = newTransport('/bin/sh', ['-c', script, 'sh', ctx.command, ...ctx.args], { stderr: 'pipe' });
    let stderr = '';
    transport.stderr.on('data', chunk => {
        stderr += chunk;
    });
    ctx.cleanups.push(() => transport.close()); // a no-op once the check closed it
    const client = newClient();
    await client.connect(transport, { timeout: 8000 });
    const result = await client.callTool({ name: 'echo', arguments: { text: 'bye' } });
    assert(textOf(result) === 'bye', `echo returned ${json(result)}`);
    const started = Date.now();
    await client.close();
    const elapsed = Date.now() - started;
    await until(() => stderr.includes('interop-exit-status='), 3000, 'the exit status');
    const status = /interop-exit-status=(\d+)/.exec(stderr)[1];
    const serverStderr = stderr.replace(/interop-exit-status=\d+\n?/, '').trim();
    if (serverStderr) log('server stderr at shutdown:', serverStderr);
    assert(elapsed < 2000, `the server outlived stdin EOF: close() took ${elapsed} ms (the SDK sends SIGTERM after 2 s)`);
    assert(status === '0', `the server exited with status ${status}`);
    return `server exited ${elapsed} ms after stdin EOF with status 0`;
}

/**
 * `shutdown` over HTTP. Modern: the client closes in time and a new client
 * gets its echo (the server outlives its clients). Legacy: the SDK ends its
 * session (DELETE), after which a POST naming it gets 404 (2025-11-25
 * transports, Session Management).
 */
async function checkHttpClose(ctx) {
    const sessionId = ctx.transport?.sessionId;
    const started = Date.now();
    if (ctx.era === 'legacy') await ctx.transport.terminateSession();
    await ctx.client.close();
    ctx.client = undefined;
    const elapsed = Date.now() - started;
    assert(elapsed < 5000, `closing took ${elapsed} ms`);
    if (ctx.era === 'legacy') {
        assert(sessionId, 'the server assigned no Mcp-Session-Id');
        const response = await fetch(ctx.url, {
            method: 'POST',
            headers: {
                'content-type': 'application/json',
                accept: 'application/json, text/event-stream',
                'mcp-session-id': sessionId,
                'mcp-protocol-version': LEGACY_PROTOCOL
            },
            body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' })
        });
        await response.body?.cancel();
        assert(response.status === 404, `a POST under the ended session got ${response.status}, want 404`);
        return `DELETE ended session ${sessionId.slice(0, 8)}… in ${elapsed} ms; a POST under it now gets 404`;
    }
    const again = newClient();
    await again.connect(new StreamableHTTPClientTransport(new URL(ctx.url)), { timeout: 8000 });
    try {
        const result = await again.callTool({ name: 'echo', arguments: { text: 'next client' } });
        assert(textOf(result) === 'next client', `echo on a new client returned ${json(result)}`);
    } finally {
        await again.close();
    }
    return `closed in ${elapsed} ms; a new client got its echo`;
}

const CHECKS = [
    ['discover', checkDiscover],
    ['tools.list', checkToolsList],
    ['tools.call.text', checkCallText],
    ['tools.call.image', checkCallImage],
    ['tools.call.structured', checkCallStructured],
    ['tools.call.error', checkCallError],
    ['tools.call.unknown', checkCallUnknown],
    ['resources.list', checkResourcesList],
    ['resources.read', checkResourcesRead],
    ['resources.templates', checkResourcesTemplates],
    ['prompts.list', checkPromptsList],
    ['prompts.get', checkPromptsGet],
    ['completion', checkCompletion],
    ['progress', checkProgress],
    ['cancellation', checkCancellation],
    ['listen.resource_updated', checkListenResourceUpdated],
    ['listen.tools_changed', checkListenToolsChanged],
    ['mrtr.elicitation', checkMrtrElicitation],
    ['shutdown', checkShutdown]
];

// ---------------------------------------------------------------------------

async function main() {
    const argv = process.argv.slice(2);
    const [command, ...args] = argv;
    if (!command || (command === '--url' && !args[0])) {
        process.stderr.write('usage: node client_checks.mjs <server command> [args...] | --url URL [--legacy]\n');
        process.exit(2);
    }
    const ctx = { command, args, wire: new Wire(Boolean(process.env.INTEROP_WIRE_LOG)), cleanups: [], era: 'modern' };
    let checks = CHECKS;
    if (command === '--url') {
        ctx.url = args[0];
        ctx.era = args.includes('--legacy') ? 'legacy' : 'modern';
        checks = CHECKS.map(([name, check]) => [name, name === 'shutdown' ? checkHttpClose : check]);
    }
    for (const [name, check] of checks) {
        try {
            const detail = await withTimeout(Promise.resolve().then(() => check(ctx)), CHECK_TIMEOUT_MS, name);
            emit(name, 'pass', detail);
        } catch (error) {
            if (error instanceof Outcome) {
                emit(name, error.status, error.message);
            } else {
                emit(name, 'fail', describe(error));
            }
            if (name === 'discover' && !ctx.client) break; // cannot connect: nothing else can run
        }
    }
    if (ctx.client) {
        await withTimeout(ctx.client.close(), 5000, 'closing the client').catch(error => log(describe(error)));
    }
    // Servers of checks that failed half-way (the SDK closes stdin, then SIGTERM, then SIGKILL).
    for (const cleanup of ctx.cleanups) {
        await withTimeout(Promise.resolve().then(cleanup), 5000, 'closing a transport').catch(error => log(describe(error)));
    }
    const failed = results.includes('fail');
    // Everything is closed; do not wait for stray handles (e.g. a timed-out check's request).
    setTimeout(() => process.exit(failed ? 1 : 0), 100).unref();
    process.exitCode = failed ? 1 : 0;
}

await main();

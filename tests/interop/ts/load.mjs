// Resolves the TypeScript SDK packages from the interop npm prefix.
//
// The runner installs tests/interop/ts/package.json into target/interop/npm
// (`npm install` there), so the packages live in
// target/interop/npm/node_modules, not next to these scripts, and ESM
// ignores NODE_PATH. So the scripts import packages through `importPkg()`
// below, which reads the package's `exports` map and imports its ESM entry
// by absolute file URL. The node_modules directory is the first of:
//   1. $INTEROP_NODE_MODULES;
//   2. an entry of $NODE_PATH that holds @modelcontextprotocol/client;
//   3. ./node_modules next to this file (scripts run from the prefix);
//   4. <repo>/target/interop/npm/node_modules (<repo> = three levels up).

import { existsSync, readFileSync } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

function findNodeModules() {
    if (process.env.INTEROP_NODE_MODULES) return resolve(process.env.INTEROP_NODE_MODULES);
    const candidates = [
        ...(process.env.NODE_PATH || '').split(delimiter).filter(Boolean),
        join(here, 'node_modules'),
    ];
    for (const dir of candidates) {
        if (existsSync(join(dir, '@modelcontextprotocol', 'client', 'package.json'))) return resolve(dir);
    }
    return resolve(here, '..', '..', '..', 'target', 'interop', 'npm', 'node_modules');
}

export const NODE_MODULES = findNodeModules();

// The ESM file an `exports` entry points at (`import` condition, else `default`).
function esmTarget(entry) {
    if (typeof entry === 'string') return entry;
    if (entry && typeof entry === 'object') {
        for (const key of ['import', 'node', 'default']) {
            if (key in entry) {
                const target = esmTarget(entry[key]);
                if (target) return target;
            }
        }
    }
    return undefined;
}

/** `await importPkg('@modelcontextprotocol/client', './stdio')`, like `import '@modelcontextprotocol/client/stdio'`. */
export async function importPkg(name, subpath = '.') {
    const root = join(NODE_MODULES, name);
    let manifest;
    try {
        manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    } catch (error) {
        throw new Error(`cannot find ${name} in ${NODE_MODULES} (set INTEROP_NODE_MODULES, or npm install there): ${error.message}`);
    }
    const exportsMap = manifest.exports;
    let target;
    if (exportsMap && typeof exportsMap === 'object' && !Array.isArray(exportsMap) && Object.keys(exportsMap)[0]?.startsWith('.')) {
        target = esmTarget(exportsMap[subpath]);
    } else if (subpath === '.') {
        target = esmTarget(exportsMap) ?? manifest.module ?? manifest.main ?? 'index.js';
    }
    if (!target) throw new Error(`${name} has no ESM export for ${subpath}`);
    return import(pathToFileURL(join(root, target)).href);
}

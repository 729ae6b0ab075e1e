#!/usr/bin/env node
// `npm run check:layers`: imports in src/ run downward (docs/architecture.md).
// Reads the import statements of every src/**/*.ts file, gives each file a
// layer, and prints every import that reaches up to a higher layer, then
// every import cycle among src files. Exits 1 when it printed anything, so
// CI (.ci/run) fails on the first upward import instead of a review finding
// ten of them later. Regular expressions, not a TypeScript parse: the code
// base writes imports one way (ES import/export ... from, import()), and a
// check that needs no build step runs in well under a second.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SRC = join(ROOT, 'src');

/** Lowest first: a file may import its own layer and those before it. */
const LAYERS = ['base', 'domain', 'api', 'app', 'cli'];

/**
 * The layer of a file, by its path under src/. The first rule that matches
 * wins, so the exceptions to a folder come before the folder.
 */
const RULES = [
  // the command line: starts the server, or talks to one as an API client
  ['cli', /^cli\.ts$|^cli\//],
  // assembles the process: the Fastify app, the list of route modules, the OpenAPI document, the server
  ['app', /^server\.ts$|^routes\.ts$|^http\/(app|openapi|openapi-document|operations|operation-examples)\.ts$/],
  // knows no domain rule: the database, settings, the scheduler, the metric registry, the generated client;
  // the plan table (orgs/plans.ts) is here because config.ts reads and checks it (WEIR_PLANS)
  ['base', /^db\/|^background\/|^client\/|^config\.ts$|^metrics\/(metrics|lean-histogram)\.ts$|^orgs\/plans\.ts$|^verification\/providers\.ts$/],
  // the HTTP API: the route toolkit (src/http), each folder's routes and response shapes,
  // the operator API, the dashboard, the /metrics scrape (on the API listener or its own)
  ['api', /^http\/|^admin\/|^dashboard\/|^metrics\/|(^|\/)([\w-]+-)?routes\.ts$|(^|\/)responses\.ts$|(^|\/)([\w-]+-)?schemas\.ts$/],
  // everything else: each folder's rules, SQL and workers (auth, orgs, endpoints, ingest, requests, delivery, ...)
  ['domain', /./],
];

function layerOf(path) {
  return RULES.find(([, re]) => re.test(path))[0];
}

function sourceFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

// import x from '…' / import type { … } from '…' / export … from '…' (possibly
// over several lines), import '…', and import('…'). Anchored at a line's
// start so an example in a comment (" * import …") is not read as code.
const STATIC = /^\s*(?:import|export)\b[^;'"`]*?\bfrom\s*['"]([^'"]+)['"]/gm;
const BARE = /^\s*import\s*['"]([^'"]+)['"]/gm;
const DYNAMIC = /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

/**
 * The src files a file imports, as paths under src/ (packages and node:
 * builtins left out). `import type` counts: a type couples two modules as
 * much as a value does, and a cycle of types is still a cycle to read.
 */
function importsOf(file, text) {
  const specs = [...text.matchAll(STATIC), ...text.matchAll(BARE), ...text.matchAll(DYNAMIC)].map((m) => m[1]);
  return [...new Set(specs.filter((s) => s.startsWith('.')).map((s) => relative(SRC, resolve(dirname(file), s.replace(/\.js$/, '.ts')))))];
}

/** Strongly connected components of more than one file (Tarjan), each a cycle of imports. */
function cycles(graph) {
  let next = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  const visit = (v) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v), index.get(w)));
      }
    }
    if (low.get(v) === index.get(v)) {
      const scc = [];
      let w;
      do {
        w = stack.pop();
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(scc.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return found;
}

/**
 * One shortest cycle through the first file of a component, as a path
 * (a -> b -> a): a component can hold dozens of files, and one concrete loop
 * says which import to cut.
 */
function loopThrough(graph, scc) {
  const inside = new Set(scc);
  const start = scc[0];
  const previous = new Map([[start, null]]);
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift();
    for (const w of graph.get(v) ?? []) {
      if (w === start) {
        const path = [start];
        for (let u = v; u !== start; u = previous.get(u)) path.splice(1, 0, u);
        return [...path, start];
      }
      if (inside.has(w) && !previous.has(w)) {
        previous.set(w, v);
        queue.push(w);
      }
    }
  }
  return scc;
}

function main() {
  const graph = new Map();
  for (const file of sourceFiles(SRC)) {
    graph.set(relative(SRC, file), importsOf(file, readFileSync(file, 'utf8')));
  }
  const rank = (path) => LAYERS.indexOf(layerOf(path));
  const upward = [];
  for (const [from, tos] of [...graph].sort(([a], [b]) => a.localeCompare(b))) {
    for (const to of tos) {
      if (rank(to) > rank(from)) upward.push(`src/${from} (${layerOf(from)}) imports src/${to} (${layerOf(to)})`);
    }
  }
  const loops = cycles(graph);
  if (upward.length > 0) {
    console.log(`${upward.length} upward import(s); layers, lowest first: ${LAYERS.join(' < ')} (docs/architecture.md)`);
    for (const line of upward) console.log(`  ${line}`);
  }
  if (loops.length > 0) {
    console.log(`${loops.length} import cycle(s) among src files:`);
    for (const scc of loops) {
      console.log(`  ${scc.length} files, e.g. ${loopThrough(graph, scc).map((p) => `src/${p}`).join(' -> ')}`);
    }
  }
  if (upward.length > 0 || loops.length > 0) process.exit(1);
  console.log(`layers: ${graph.size} files, imports run downward (${LAYERS.join(' < ')}), no cycles`);
}

main();

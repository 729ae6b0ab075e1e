import releaseSync from '@jitl/quickjs-wasmfile-release-sync';
import {
  newQuickJSWASMModuleFromVariant,
  type QuickJSContext,
  type QuickJSHandle,
  type QuickJSRuntime,
  type QuickJSSyncVariant,
  type QuickJSWASMModule,
} from 'quickjs-emscripten-core';
import type { Config } from '../config.ts';
import { codeHash } from './hash.ts';

/**
 * The sandbox transformations run in: QuickJS compiled to WebAssembly
 * (quickjs-emscripten). Each code version gets its own QuickJS runtime (its
 * own heap, with a hard memory limit) and context, holding only the
 * language's standard objects: no process, require, fetch, timers, file
 * system or anything of the host, because nothing of the host is ever
 * handed in. Data crosses as JSON text, both ways.
 *
 * Runs are synchronous on the calling thread, bounded by an interrupt
 * handler (the CPU limit) and the runtime's memory limit. A run that hit a
 * limit, or that the host had to stop (a native stack overflow), leaves its
 * runtime unused: it is disposed and the next run of that code builds a new
 * one; a host-side fault drops the whole WebAssembly instance.
 */

/** CPU time a run may take (docs/transformations.md). */
export const DEFAULT_CPU_MS = 50;
/** A run is stopped after this many times its CPU limit in wall-clock time however little CPU it got (a busy machine). */
const WALL_FACTOR = 20;
/** This process's CPU time, user and system, in µs. */
const cpuMicros = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
/** The heap of one code version's runtime, code and state included. */
export const DEFAULT_MEMORY_BYTES = 16 * 1024 * 1024;
/** QuickJS's own stack limit: well inside the host's native stack, which WebAssembly frames share. */
const MAX_STACK_BYTES = 256 * 1024;
/** Code longer than this is refused when saved. */
export const CODE_MAX_CHARS = 64 * 1024;
/** console.log capture: at most this many lines, each cut to LOG_LINE_MAX characters. */
export const LOG_LINES_MAX = 50;
export const LOG_LINE_MAX = 1000;
/** Compiled code versions kept warm; the least recently used is disposed past this. */
const CACHE_MAX = 64;

export interface Limits {
  cpuMs: number;
  memoryBytes: number;
  /** The largest output (the handler's JSON answer) accepted, in bytes: the ingest body limit. */
  maxOutputBytes: number;
}

export const DEFAULT_LIMITS: Limits = { cpuMs: DEFAULT_CPU_MS, memoryBytes: DEFAULT_MEMORY_BYTES, maxOutputBytes: 10 * 1024 * 1024 };

/** The limits the settings give. */
export function limitsOf(config: Pick<Config, 'transformCpuMs' | 'transformMemoryBytes' | 'maxBodyBytes'>): Limits {
  return { cpuMs: config.transformCpuMs, memoryBytes: config.transformMemoryBytes, maxOutputBytes: config.maxBodyBytes };
}

export type RunOutcome =
  | { ok: true; output: unknown; logs: string[]; durationMs: number }
  | { ok: false; error: 'transformation_timeout' | 'transformation_memory' | 'transformation_error'; message: string; logs: string[]; durationMs: number };

export interface CompileProblem {
  message: string;
  line: number | null;
  column: number | null;
}

export { codeHash };

// Installed before the user's code: a console whose lines stay inside the
// sandbox until the run returns them, and the runner that moves JSON in and
// out. `handler` is looked up when a run starts, so the code defines it as
// a plain function declaration.
const PRELUDE = `(function () {
  var lines = [];
  function show(v) {
    if (typeof v === 'string') return v;
    try { var s = JSON.stringify(v); return s === undefined ? String(v) : s; } catch (e) { return String(v); }
  }
  function log() {
    if (lines.length >= ${LOG_LINES_MAX}) return;
    var parts = [];
    for (var i = 0; i < arguments.length; i++) parts.push(show(arguments[i]));
    var line = parts.join(' ');
    lines.push(line.length > ${LOG_LINE_MAX} ? line.slice(0, ${LOG_LINE_MAX}) + '…' : line);
  }
  globalThis.console = { log: log, info: log, warn: log, error: log, debug: log };
  Object.defineProperty(globalThis, '__weir_logs', { value: function () { var l = lines; lines = []; return l; } });
})();
`;

const RUNNER = `(function (input) {
  if (typeof handler !== 'function') throw new TypeError('the code does not define function handler(request, context)');
  var args = JSON.parse(input);
  var out = handler(args.request, args.context);
  if (out !== null && typeof out === 'object' && typeof out.then === 'function') throw new TypeError('handler must return the request (or null), not a Promise');
  if (out === undefined) throw new TypeError('handler returned undefined: return the request to send, or null not to forward it');
  return JSON.stringify({ out: out, logs: __weir_logs() });
})`;

interface Fresh {
  runtime: QuickJSRuntime;
  context: QuickJSContext;
  /** Starts the CPU limit's clock: the runtime's interrupt handler, set once when it was made, stops the code after `ms` of CPU time. */
  arm(ms: number): void;
}

interface Compiled extends Fresh {
  run: QuickJSHandle;
}

// Run once on each new WebAssembly instance, before any user code: V8
// compiles WebAssembly functions lazily, on their first call, so the first
// run of QuickJS's parser, JSON and object code paid that compile (200 ms
// on a loaded machine) inside the user's CPU limit and failed as a
// transformation_timeout. Our own code, not timed.
const WARM_UP = `function handler(request, context) {
  var h = { ...request.headers, 'x-a': String(context.request_id).toUpperCase() };
  delete h['x-b'];
  var b = request.body, o = b.data.object, list = [1, 2, 3].map(function (n) { return n * 2; }).filter(Boolean);
  console.log('warm', b.type, /ch.rge/.test(b.type), Math.round(o.amount / 100).toFixed(2), list.join(','), JSON.stringify(o).length);
  return { ...request, path: '/x' + request.path.slice(1), headers: h, body: { id: b.id, amount: o.amount / 100, at: new Date(0).toISOString(), s: 'abc'.replace('b', 'd').split('') } };
}`;
const WARM_UP_INPUT = JSON.stringify({
  request: { method: 'POST', path: '/p', query: 'a=1', headers: { 'content-type': 'application/json', 'x-b': 'y' }, body: { id: 'evt', type: 'charge', data: { object: { amount: 2000, currency: 'usd' } } } },
  context: { request_id: 'r' },
});

/** Where in the code a QuickJS error points: its stack's first `transformation.js:line:column`. */
function position(stack: unknown): { line: number | null; column: number | null } {
  const m = typeof stack === 'string' ? /transformation\.js:(\d+):(\d+)/.exec(stack) : null;
  return m ? { line: Number(m[1]), column: Number(m[2]) } : { line: null, column: null };
}

function errorText(e: unknown): string {
  if (e && typeof e === 'object') {
    const o = e as { name?: unknown; message?: unknown };
    const msg = typeof o.message === 'string' ? o.message : JSON.stringify(e);
    return typeof o.name === 'string' ? `${o.name}: ${msg}` : msg;
  }
  return String(e);
}

function classify(e: unknown): 'transformation_timeout' | 'transformation_memory' | 'transformation_error' {
  const o = (e && typeof e === 'object' ? e : {}) as { name?: unknown; message?: unknown };
  if (o.name === 'InternalError' && o.message === 'interrupted') return 'transformation_timeout';
  if (o.name === 'InternalError' && o.message === 'out of memory') return 'transformation_memory';
  return 'transformation_error';
}

export class Sandbox {
  private module: QuickJSWASMModule | null = null;
  private loading: Promise<QuickJSWASMModule> | null = null;
  /** Compiled code versions by key, oldest use first (Map order). */
  private readonly cache = new Map<string, Compiled>();
  /** How long the last WebAssembly instance took to start, in ms (bench/forward.ts prints it). */
  coldStartMs = 0;

  private async wasm(): Promise<QuickJSWASMModule> {
    if (this.module) return this.module;
    this.loading ??= (async () => {
      const t = performance.now();
      const m = await newQuickJSWASMModuleFromVariant(releaseSync as unknown as QuickJSSyncVariant);
      this.warmUp(m);
      this.coldStartMs = performance.now() - t;
      this.module = m;
      this.loading = null;
      return m;
    })();
    return this.loading;
  }

  /** Forgets the WebAssembly instance after a host-side fault: its memory may be inconsistent, so nothing of it is touched again. */
  private dropInstance(): void {
    this.module = null;
    this.cache.clear();
  }

  /** Compiles the WebAssembly functions a typical run uses (WARM_UP), so their compile never counts against a user's CPU limit. */
  private warmUp(m: QuickJSWASMModule): void {
    const c = this.newRuntime(m, DEFAULT_LIMITS);
    try {
      c.arm(60_000);
      for (const src of [PRELUDE, WARM_UP]) c.context.evalCode(src, 'weir.js').dispose();
      const check = c.context.evalCode('let x = ;', 'weir.js'); // the syntax-error path compileProblem takes
      check.dispose();
      const run = c.context.evalCode(RUNNER, 'weir.js');
      if (run.error) return run.error.dispose();
      const arg = c.context.newString(WARM_UP_INPUT);
      const out = c.context.callFunction(run.value, c.context.undefined, arg);
      if (!out.error) c.context.getString(out.value);
      out.dispose();
      arg.dispose();
      run.value.dispose();
    } finally {
      this.dispose(c);
    }
  }

  private newRuntime(m: QuickJSWASMModule, limits: Limits): Fresh {
    const runtime = m.newRuntime();
    runtime.setMemoryLimit(limits.memoryBytes);
    runtime.setMaxStackSize(MAX_STACK_BYTES);
    // One handler for the runtime's life, reading deadlines each run moves
    // (no new closure a run). The limit is CPU time: this process's, read
    // when QuickJS asks (every few thousand operations), since a run is
    // synchronous on this thread. A wall-clock limit would fail good code
    // whenever the machine is busy and the process waits for a core; a
    // wall-clock ceiling of WALL_FACTOR times the limit (at least 1 s)
    // still stops a run whatever the CPU accounting says.
    let cpuDeadline = 0;
    let wallDeadline = 0;
    runtime.setInterruptHandler(() => cpuMicros() > cpuDeadline || Date.now() > wallDeadline);
    const context = runtime.newContext();
    return {
      runtime,
      context,
      arm: (ms) => {
        cpuDeadline = cpuMicros() + ms * 1000;
        wallDeadline = Date.now() + Math.max(ms * WALL_FACTOR, 1000);
      },
    };
  }

  private dispose(c: Fresh & { run?: QuickJSHandle }): void {
    try {
      if (c.run?.alive) c.run.dispose();
      c.context.dispose();
      c.runtime.dispose();
    } catch {
      // a runtime left inconsistent by a limit: drop the instance rather than trust it
      this.dropInstance();
    }
  }

  /**
   * Whether `code` compiles and defines function handler: the syntax error
   * (or the error its top level throws) with its line and column, or null.
   * The top level runs under the same limits as a run.
   */
  async compileProblem(code: string, limits: Limits = DEFAULT_LIMITS): Promise<CompileProblem | null> {
    if (code.length > CODE_MAX_CHARS) return { message: `the code is longer than ${CODE_MAX_CHARS} characters`, line: null, column: null };
    const m = await this.wasm();
    const c = this.newRuntime(m, limits);
    try {
      c.arm(limits.cpuMs);
      const parsed = c.context.evalCode(code, 'transformation.js', { compileOnly: true });
      if (parsed.error) {
        const e = c.context.dump(parsed.error);
        parsed.error.dispose();
        return { message: errorText(e), ...position((e as { stack?: unknown })?.stack) };
      }
      parsed.value.dispose();
      const ran = c.context.evalCode(`${code}\n;typeof handler`, 'transformation.js');
      if (ran.error) {
        const e = c.context.dump(ran.error);
        ran.error.dispose();
        const kind = classify(e);
        const what = kind === 'transformation_timeout' ? 'the top level ran past the CPU limit' : kind === 'transformation_memory' ? 'the top level ran out of memory' : errorText(e);
        return { message: what, ...position((e as { stack?: unknown })?.stack) };
      }
      const type = c.context.dump(ran.value);
      ran.value.dispose();
      if (type !== 'function') return { message: 'the code does not define function handler(request, context)', line: null, column: null };
      return null;
    } catch (err) {
      this.dropInstance();
      return { message: `the code could not be checked: ${(err as Error).message}`, line: null, column: null };
    } finally {
      if (this.module === m) this.dispose(c);
    }
  }

  private async compiled(key: string, code: string, limits: Limits): Promise<Compiled | { error: unknown }> {
    const hit = this.cache.get(key);
    if (hit) {
      this.cache.delete(key);
      this.cache.set(key, hit);
      return hit;
    }
    const m = await this.wasm();
    const c = this.newRuntime(m, limits);
    c.arm(limits.cpuMs);
    const steps = [PRELUDE, code];
    for (const [i, src] of steps.entries()) {
      const r = c.context.evalCode(src, i === 1 ? 'transformation.js' : 'weir.js');
      if (r.error) {
        const e = c.context.dump(r.error);
        r.error.dispose();
        this.dispose(c);
        return { error: e };
      }
      r.value.dispose();
    }
    const r = c.context.evalCode(RUNNER, 'weir.js');
    if (r.error) {
      const e = c.context.dump(r.error);
      r.error.dispose();
      this.dispose(c);
      return { error: e };
    }
    const entry: Compiled = { ...c, run: r.value };
    this.cache.set(key, entry);
    if (this.cache.size > CACHE_MAX) {
      const [oldKey, old] = this.cache.entries().next().value as [string, Compiled];
      this.cache.delete(oldKey);
      this.dispose(old);
    }
    return entry;
  }

  /**
   * Runs handler(request, context) of `code`. `scope` keeps code versions of
   * different owners apart (an organization id): state a handler leaves in
   * its globals is seen only by later runs of the same code and scope.
   * `fresh` runs in a runtime made for this run alone (transform-test).
   */
  async run(code: string, input: { request: unknown; context: unknown }, opts: { scope: string; limits?: Limits; fresh?: boolean }): Promise<RunOutcome> {
    const limits = opts.limits ?? DEFAULT_LIMITS;
    const key = `${opts.scope}:${codeHash(code)}`;
    const started = performance.now();
    const ms = () => Math.round((performance.now() - started) * 1000) / 1000;
    const inputJson = JSON.stringify(input);
    let entry: Compiled | undefined;
    try {
      if (opts.fresh) this.evict(key);
      const got = await this.compiled(key, code, limits);
      if ('error' in got) return { ok: false, error: classify(got.error), message: errorText(got.error), logs: [], durationMs: ms() };
      entry = got;
      const { context, run } = entry;
      entry.arm(limits.cpuMs);
      const arg = context.newString(inputJson);
      let result;
      try {
        result = context.callFunction(run, context.undefined, arg);
      } finally {
        if (arg.alive) arg.dispose();
      }
      if (result.error) {
        const e = context.dump(result.error);
        result.error.dispose();
        const logs = this.drainLogs(entry, limits);
        const kind = classify(e);
        // a limit leaves the runtime mid-way: never reuse it
        if (kind !== 'transformation_error' || opts.fresh) this.evict(key);
        const message = kind === 'transformation_error' ? errorText(e) : kind;
        return { ok: false, error: kind, message, logs, durationMs: ms() };
      }
      const text = context.getString(result.value);
      result.value.dispose();
      if (opts.fresh) this.evict(key);
      if (Buffer.byteLength(text) > limits.maxOutputBytes + 64 * 1024) {
        return { ok: false, error: 'transformation_error', message: `the handler's answer is larger than the body limit (${limits.maxOutputBytes} bytes)`, logs: [], durationMs: ms() };
      }
      const parsed = JSON.parse(text) as { out: unknown; logs: string[] };
      return { ok: true, output: parsed.out, logs: parsed.logs, durationMs: ms() };
    } catch (err) {
      // the host stopped the run (a native stack overflow inside WebAssembly): start over with a new instance
      this.dropInstance();
      const e = (err as Error)?.message ?? String(err);
      return { ok: false, error: 'transformation_error', message: `the sandbox stopped the code: ${e}`, logs: [], durationMs: ms() };
    }
  }

  private drainLogs({ context, arm }: Compiled, limits: Limits): string[] {
    try {
      arm(limits.cpuMs);
      const r = context.evalCode('JSON.stringify(__weir_logs())');
      if (r.error) {
        r.error.dispose();
        return [];
      }
      const logs = JSON.parse(context.getString(r.value)) as string[];
      r.value.dispose();
      return logs;
    } catch {
      return [];
    }
  }

  private evict(key: string): void {
    const c = this.cache.get(key);
    if (!c) return;
    this.cache.delete(key);
    this.dispose(c);
  }

  /** Code versions compiled and kept warm right now. */
  get cached(): number {
    return this.cache.size;
  }

  /** Disposes every runtime (tests and shutdown). */
  close(): void {
    for (const c of this.cache.values()) this.dispose(c);
    this.cache.clear();
  }
}

/** The process's sandbox: one WebAssembly instance, loaded on first use. */
export const sandbox = new Sandbox();

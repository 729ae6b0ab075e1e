import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createFreshDatabase, onPostgres } from './db.ts';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const WEIR_BIN = join(ROOT, 'bin/weir.mjs');

type Env = Record<string, string | undefined>;

/** The environment of a spawned Weir: this process's, without anything WEIR_* or DATABASE_URL leaking in. */
export function cleanEnv(extra: Env = {}): Env {
  const env: Env = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('WEIR_') && k !== 'DATABASE_URL') env[k] = v;
  return { ...env, WEIR_LOG_LEVEL: 'warn', ...extra };
}

export interface Store {
  /** DATABASE_URL (a fresh PostgreSQL database) or WEIR_DATA_DIR (a fresh folder), as the test run's database asks. */
  env: Env;
  drop(): Promise<void>;
}

/** An empty database for a spawned Weir: a fresh PostgreSQL database when DATABASE_URL is set, else a fresh PGlite folder. */
export async function freshStore(): Promise<Store> {
  if (onPostgres) {
    const fresh = await createFreshDatabase();
    return { env: { DATABASE_URL: fresh.url }, drop: fresh.drop };
  }
  const dir = mkdtempSync(join(tmpdir(), 'weir-test-'));
  return { env: { WEIR_DATA_DIR: dir }, drop: async () => rmSync(dir, { recursive: true, force: true }) };
}

export interface WeirProcess {
  child: ChildProcess;
  apiPort: number;
  ingestPort: number;
  /** The WEIR_METRICS_PORT listener's port, when it printed one. */
  metricsPort: number | undefined;
  base: string;
  /** The key printed on first start, if this start printed one. */
  bootstrapKey: string | undefined;
  stdout(): string;
  stderr(): string;
  /** Sends the signal and resolves with the exit code (null when killed by a signal). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export function runWeir(args: string[], env: Env): { child: ChildProcess; out: { stdout: string; stderr: string }; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [WEIR_BIN, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const out = { stdout: '', stderr: '' };
  child.stdout!.on('data', (d) => (out.stdout += d));
  child.stderr!.on('data', (d) => (out.stderr += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, out, exited };
}

/** Runs `weir ...` to completion. */
export async function runWeirToEnd(args: string[], env: Env): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const { out, exited } = runWeir(args, env);
  const code = await exited;
  return { code, ...out };
}

/** Spawns `node bin/weir.mjs serve` (ports 0 unless given) and waits until both listeners print their port. */
export async function startWeirProcess(env: Env, timeoutMs = 60_000): Promise<WeirProcess> {
  const { child, out, exited } = runWeir(['serve'], cleanEnv({ WEIR_API_PORT: '0', WEIR_INGEST_PORT: '0', ...env }));
  let exitCode: number | null | undefined;
  void exited.then((c) => (exitCode = c));
  const deadline = Date.now() + timeoutMs;
  let api: RegExpExecArray | null = null;
  let ingest: RegExpExecArray | null = null;
  while (Date.now() < deadline) {
    api = /API: +(\S+)\/v1 +\(port (\d+)\)/.exec(out.stdout);
    ingest = /Ingest: +\S+ +\(port (\d+)\)/.exec(out.stdout);
    if (api && ingest) break;
    if (exitCode !== undefined) throw new Error(`weir serve exited with ${exitCode}:\n${out.stdout}\n${out.stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  if (!api || !ingest) {
    child.kill('SIGKILL');
    throw new Error(`weir serve did not start within ${timeoutMs} ms:\n${out.stdout}\n${out.stderr}`);
  }
  const key = /^\s+(wr_live_\S+)\s*$/m.exec(out.stdout);
  const metrics = /Metrics: +\S+ +\(port (\d+)\)/.exec(out.stdout);
  return {
    child,
    apiPort: Number(api[2]),
    ingestPort: Number(ingest[1]),
    metricsPort: metrics ? Number(metrics[1]) : undefined,
    base: `http://127.0.0.1:${api[2]}`,
    bootstrapKey: key?.[1],
    stdout: () => out.stdout,
    stderr: () => out.stderr,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (exitCode !== undefined) return exitCode;
      child.kill(signal);
      return exited;
    },
  };
}

/** fetch() with a bearer token and JSON, returning status and parsed body. */
export async function http(
  base: string,
  method: string,
  path: string,
  opts: { token?: string; body?: unknown } = {},
): Promise<{ status: number; json: any }> {
  const res = await fetch(base + path, {
    method,
    headers: {
      ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
      ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, json };
}

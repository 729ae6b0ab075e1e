// A real `weir serve` in a child process, as the ingest and events benches
// run it: the environment built from scratch (only the store and what the
// caller adds reach it), ports chosen by the system, the bootstrap key read
// from its banner, and one endpoint created through the API.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { LoadResult } from './ingest-load.ts';

export const ROOT = fileURLToPath(new URL('../', import.meta.url));

export function child(args: string[], env: Record<string, string | undefined> = process.env): { proc: ChildProcess; output: () => string; exited: Promise<unknown> } {
  const proc = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  return { proc, output: () => out, exited };
}

export async function waitFor<T>(get: () => T | undefined, what: string, ms = 120_000): Promise<T> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const v = get();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** A JSON body shaped like a provider's event (a Stripe invoice.paid), padded to `bytes`: what the ingest benches send. */
export function providerEventBody(bytes: number): string {
  const event = { id: 'evt_1NirD82eZvKYlo2CIvbtLWuY', type: 'invoice.paid', created: 1700000000, data: { object: { amount: 4200, currency: 'usd', pad: '' } } };
  event.data.object.pad = 'x'.repeat(bytes - JSON.stringify(event).length);
  return JSON.stringify(event);
}

export interface WeirProcess {
  /** The API's base address, without /v1. */
  api: string;
  /** The bootstrap owner's API key. */
  key: string;
  /** Where the endpoint's webhooks are sent. */
  ingestUrl: string;
  endpointId: string;
  pid: number;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
  /** SIGTERM, then wait for the exit. Safe to call twice. */
  stop(): Promise<void>;
}

/**
 * Starts `weir serve` with `store` (WEIR_DATA_DIR or DATABASE_URL, and any
 * WEIR_ setting) and creates one endpoint. `nodeArgs` go to node itself
 * (for example `--cpu-prof`, which NODE_OPTIONS does not take).
 */
export async function spawnWeir(name: string, store: Record<string, string>, endpoint: object = { name: 'bench' }, nodeArgs: string[] = []): Promise<WeirProcess> {
  const env: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('WEIR_') && k !== 'DATABASE_URL') env[k] = v;
  Object.assign(env, { WEIR_API_PORT: '0', WEIR_INGEST_PORT: '0', WEIR_LOG_LEVEL: 'warn' }, store);
  const c = child([...nodeArgs, 'bin/weir.mjs', 'serve'], env);
  const started = await waitFor(() => {
    const out = c.output();
    const api = /API: +(\S+)\/v1 /.exec(out);
    const ingest = /Ingest: +\S+ +\(port (\d+)\)/.exec(out);
    const key = /^\s+(\S+_live_\S+)\s*$/m.exec(out);
    if (c.proc.exitCode !== null) throw new Error(`weir exited:\n${out}`);
    return api && ingest && key ? { api: api[1], port: ingest[1], key: key[1] } : undefined;
  }, name);
  const res = await fetch(`${started.api}/v1/endpoints`, {
    method: 'POST',
    headers: { authorization: `Bearer ${started.key}`, 'content-type': 'application/json' },
    body: JSON.stringify(endpoint),
  });
  if (!res.ok) throw new Error(`creating the endpoint: ${res.status} ${await res.text()}`);
  const { data } = (await res.json()) as { data: { id: string; slug: string } };
  let stopped: Promise<void> | undefined;
  return {
    api: started.api,
    key: started.key,
    ingestUrl: `http://127.0.0.1:${started.port}/h/${data.slug}`,
    endpointId: data.id,
    pid: c.proc.pid!,
    output: c.output,
    stop() {
      stopped ??= (async () => {
        c.proc.kill('SIGTERM');
        await c.exited;
      })();
      return stopped;
    },
  };
}

/**
 * One run of bench/ingest-load.ts (wrk or autocannon in its own process):
 * POSTs `bodyFile` to `url` on `connections` connections for `seconds`,
 * writes the acknowledged request ids to `idsFile` when given, and paces
 * to `rate` requests per second when given.
 */
export async function runLoad(
  o: { url: string; seconds: number; connections: number; bodyFile: string; idsFile?: string; rate?: number },
  env: Record<string, string | undefined> = process.env,
): Promise<LoadResult> {
  const args = ['--import', 'tsx', 'bench/ingest-load.ts', o.url, String(o.seconds), String(o.connections), o.bodyFile, o.idsFile ?? ''];
  if (o.rate) args.push(String(o.rate));
  const c = child(args, env);
  await c.exited;
  const line = c.output().trim().split('\n').pop() ?? '';
  try {
    return JSON.parse(line) as LoadResult;
  } catch {
    throw new Error(`load generator failed:\n${c.output()}`);
  }
}

// The typical filter of issue 26: 5 rules, one $or, every bench capture (providerEventBody) matches it; bench:ingest's BENCH_ROUTING=filter and bench/filter-profile.ts use it.
export const TYPICAL_FILTER = {
  headers: { 'content-type': { $startsWith: 'application/json' } },
  body: {
    type: { $startsWith: 'invoice.' },
    $or: [{ data: { object: { currency: 'usd' } } }, { data: { object: { currency: 'eur' } } }],
    data: { object: { amount: { $gte: 100 } } },
    livemode: { $neq: true },
  },
};

// The live tail under real ingest (part (c) of bench/events.ts): a real
// `weir serve` on PGlite or PostgreSQL, saturated by HTTP webhooks (wrk or
// autocannon, 50 connections, 1 KiB JSON, bench/ingest-load.ts) while one
// client follows GET /v1/endpoints/:id/requests/stream over HTTP. Prints:
//  - the captures/s acknowledged, and of the captures the client saw, the
//    rate they were received at (first to last received_at) and the rate
//    it was handed them (first to last seen);
//  - their ratio (1.0: the tail keeps up with the fastest ingest);
//  - which acknowledged captures it never saw, and any overflow event;
//  - the lag from a capture's received_at to the client reading it, p50 and
//    p99: an upper bound of acknowledgement → client, since a capture is
//    acknowledged after it is received.
// The tail's work runs in the server's process, so on PGlite it shares one
// thread with ingest and with the database: what is measured is whether
// the tail keeps up with what that process can capture, not with a rate
// the process never reaches.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createFreshDatabase } from '../test/helpers/db.ts';
import { loadGenerator } from './ingest-load.ts';
import { providerEventBody, runLoad, spawnWeir, type WeirProcess } from './weir-process.ts';

const CONNECTIONS = 50;
const now = () => performance.timeOrigin + performance.now();
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};

interface Follower {
  seen: Map<string, { at: number; receivedAt: number }>;
  overflows: number;
  closed: string[];
  stop(): void;
}

/** Reads the stream as a client would: SSE frames separated by a blank line. */
async function follow(weir: WeirProcess): Promise<Follower> {
  const ctl = new AbortController();
  const res = await fetch(`${weir.api}/v1/endpoints/${weir.endpointId}/requests/stream`, {
    headers: { authorization: `Bearer ${weir.key}`, accept: 'text/event-stream' },
    signal: ctl.signal,
  });
  if (!res.ok || !res.body) throw new Error(`stream: ${res.status} ${await res.text()}`);
  const f: Follower = { seen: new Map(), overflows: 0, closed: [], stop: () => ctl.abort() };
  const decoder = new TextDecoder();
  let buffered = '';
  void (async () => {
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffered += decoder.decode(chunk, { stream: true });
        let end: number;
        while ((end = buffered.indexOf('\n\n')) >= 0) {
          const frame = buffered.slice(0, end);
          buffered = buffered.slice(end + 2);
          const at = now();
          const event = /^event: (.*)$/m.exec(frame)?.[1];
          const data = /^data: (.*)$/m.exec(frame)?.[1];
          if (event === 'request' && data) {
            const c = JSON.parse(data) as { id: string; received_at: string };
            f.seen.set(c.id, { at, receivedAt: Date.parse(c.received_at) });
          } else if (event === 'overflow') f.overflows++;
          else if (event === 'closed') f.closed.push(data ?? '');
        }
      }
    } catch (err) {
      if (!ctl.signal.aborted) throw err;
    }
  })();
  return f;
}

/** One measurement on one store; returns the keep-up ratio. */
export async function tailUnderHttpIngest(store: 'pglite' | 'postgres', seconds: number, pgBase: string): Promise<number> {
  const work = mkdtempSync(join(tmpdir(), 'weir-tail-bench-'));
  const fresh = store === 'postgres' ? await createFreshDatabase(pgBase) : undefined;
  const weir = await spawnWeir(`Weir on ${store}`, fresh ? { DATABASE_URL: fresh.url } : { WEIR_DATA_DIR: join(work, 'data') });
  try {
    const bodyFile = join(work, 'body.json');
    writeFileSync(bodyFile, providerEventBody(1024));
    const env = { ...process.env, BENCH_LOAD: loadGenerator() };
    // warm-up without a follower (JIT, the first pages of the tables)
    await runLoad({ url: weir.ingestUrl, seconds: 2, connections: CONNECTIONS, bodyFile }, env);
    const f = await follow(weir);
    await new Promise((r) => setTimeout(r, 200));
    const idsFile = join(work, 'ids.txt');
    const t0 = now();
    const m = await runLoad({ url: weir.ingestUrl, seconds, connections: CONNECTIONS, bodyFile, idsFile }, env);
    const loadMs = now() - t0;
    const acked = readFileSync(idsFile, 'utf8').split('\n').filter(Boolean);
    const deadline = now() + 30_000;
    while (acked.some((id) => !f.seen.has(id)) && f.closed.length === 0 && now() < deadline) await new Promise((r) => setTimeout(r, 50));
    f.stop();
    const missing = acked.filter((id) => !f.seen.has(id)).length;
    const mine = acked.flatMap((id) => (f.seen.has(id) ? [f.seen.get(id)!] : []));
    // Both rates over the same captures: received first to received last,
    // and seen first to seen last, so a constant lag does not read as a
    // slower tail (the lag is printed on its own).
    const span = (xs: number[]) => xs.reduce((a, b) => Math.max(a, b), -Infinity) - xs.reduce((a, b) => Math.min(a, b), Infinity);
    const ingestRate = (mine.length / span(mine.map((s) => s.receivedAt))) * 1000;
    const tailRate = (mine.length / span(mine.map((s) => s.at))) * 1000;
    const lag = mine.map((s) => s.at - s.receivedAt);
    const ratio = tailRate / ingestRate;
    console.log(
      `  ${store.padEnd(8)} acknowledged ${acked.length} (${(acked.length / (loadMs / 1000)).toFixed(0)}/s, ${m.non2xx} non-2xx), received at ${ingestRate.toFixed(0)}/s; the client saw ${mine.length} at ${tailRate.toFixed(0)}/s, ` +
        `${missing} missing, ${f.overflows} overflow events${f.closed.length ? `, closed: ${f.closed.join(' ')}` : ''}; ratio ${ratio.toFixed(3)}; ` +
        `received → client p50 ${pct(lag, 50).toFixed(0)} ms, p99 ${pct(lag, 99).toFixed(0)} ms, max ${Math.max(...lag).toFixed(0)} ms`,
    );
    return ratio;
  } finally {
    await weir.stop();
    await fresh?.drop();
    rmSync(work, { recursive: true, force: true });
  }
}

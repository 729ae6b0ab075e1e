/**
 * Propagation benchmark (npm run bench:propagation, needs DATABASE_URL):
 * how long a change made through one Weir node takes to show on another
 * whose key cache was warm. Two real `weir serve` processes on a fresh
 * PostgreSQL database beside DATABASE_URL; each round demotes (or revokes)
 * through node 1 and polls node 2 every 5 ms until it answers differently.
 * Printed: p50 and max of the propagation time, next to the baseline of the
 * same run, one plain authenticated request to node 2 (what a poll costs),
 * and their ratio. test/auth/propagation.test.ts asserts that propagation
 * happens; this measures how fast. Env: BENCH_ROUNDS (default 20).
 */
import { freshStore, http, startWeirProcess } from '../test/helpers/weir-process.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);
const TOKEN = 'propagation-bench-operator-token';

if (!process.env.DATABASE_URL) {
  console.error('bench:propagation needs DATABASE_URL: propagation is between nodes, and the embedded database allows one');
  process.exit(2);
}

function percentile(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}

const store = await freshStore();
const env = { ...store.env, WEIR_ADMIN_TOKEN: TOKEN };
const [node1, node2] = await Promise.all([startWeirProcess(env), startWeirProcess(env)]);
try {
  const operator = async (method: string, path: string, body?: unknown) => {
    const res = await http(node1.base, method, `/admin/v1${path}`, { token: TOKEN, body });
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.json)}`);
    return res.json?.data;
  };
  const org = await operator('POST', '/organizations', { name: 'Propagation bench' });
  await operator('POST', `/organizations/${org.id}/members`, { email: 'boss@example.com', role: 'super_admin' });

  /** Polls node 2 until `done(status)`; the time from `since`. */
  const until = async (path: string, key: string, done: (s: number) => boolean, since: number) => {
    for (;;) {
      const { status } = await http(node2.base, 'GET', path, { token: key });
      if (done(status)) return performance.now() - since;
      if (performance.now() - since > 60_000) throw new Error(`node 2 still answers ${status} after 60 s`);
      await new Promise((r) => setTimeout(r, 5));
    }
  };

  const demotion: number[] = [];
  const revocation: number[] = [];
  const request: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const m = await operator('POST', `/organizations/${org.id}/members`, { email: `admin${i}@example.com`, role: 'admin' });
    const k = await operator('POST', `/members/${m.id}/api-keys`, { name: `k${i}` });
    for (let w = 0; w < 3; w++) {
      const t0 = performance.now();
      const { status } = await http(node2.base, 'GET', '/v1/audit-log', { token: k.key });
      request.push(performance.now() - t0);
      if (status !== 200) throw new Error(`warm-up answered ${status}`);
    }
    let since = performance.now();
    await operator('PATCH', `/members/${m.id}`, { role: 'developer' });
    demotion.push(await until('/v1/audit-log', k.key, (s) => s === 403, since));
    since = performance.now();
    await operator('DELETE', `/api-keys/${k.id}`);
    revocation.push(await until('/v1/me', k.key, (s) => s === 401, since));
  }
  const base = percentile(request, 50);
  const line = (name: string, v: number[]) =>
    `${name.padEnd(12)} p50 ${percentile(v, 50).toFixed(1)} ms, max ${Math.max(...v).toFixed(1)} ms (${(percentile(v, 50) / base).toFixed(1)}x one request)`;
  console.log(`propagation between two Weir nodes on PostgreSQL, ${ROUNDS} rounds (change made through node 1, seen on node 2):`);
  console.log(`baseline     one authenticated request to node 2: p50 ${base.toFixed(1)} ms`);
  console.log(line('demotion', demotion));
  console.log(line('revocation', revocation));
} finally {
  await Promise.all([node1.stop(), node2.stop()]);
  await store.drop();
}

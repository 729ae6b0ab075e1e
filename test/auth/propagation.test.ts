import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { onPostgres } from '../helpers/db.ts';
import { freshStore, http, startWeirProcess, type Store, type WeirProcess } from '../helpers/weir-process.ts';

// Role, scope and revocation changes reach every node within 1 second: two
// real Weir processes on one PostgreSQL, each caching keys; a change made
// through node 1 must show on node 2 (whose cache was warm) within the bound.
// 1 second is the correctness bound the issue sets (the specification allows
// up to 60 s), not a performance target; the measured time is reported.

const skip = !onPostgres && 'PostgreSQL only: the embedded database is one process';
const TOKEN = 'propagation-operator-token';
const BOUND_MS = 1000;
let store: Store;
let node1: WeirProcess;
let node2: WeirProcess;

before(async () => {
  if (skip) return;
  store = await freshStore();
  [node1, node2] = await Promise.all([startWeirProcess({ ...store.env, WEIR_ADMIN_TOKEN: TOKEN }), startWeirProcess({ ...store.env, WEIR_ADMIN_TOKEN: TOKEN })]);
});

after(async () => {
  if (skip) return;
  await Promise.all([node1?.stop(), node2?.stop()]);
  await store.drop();
});

async function operator(method: string, path: string, body?: unknown) {
  const res = await http(node1.base, method, `/admin/v1${path}`, { token: TOKEN, body });
  assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${JSON.stringify(res.json)}`);
  return res.json?.data;
}

/** An organization with a super_admin (so anyone else may be demoted) and an admin holding a full-access key. */
async function tenant() {
  const org = await operator('POST', '/organizations', { name: `Prop ${Math.random()}` });
  const boss = await operator('POST', `/organizations/${org.id}/members`, { email: 'boss@example.com', role: 'super_admin' });
  const bossKey = await operator('POST', `/members/${boss.id}/api-keys`, { name: 'boss' });
  const admin = await operator('POST', `/organizations/${org.id}/members`, { email: 'admin@example.com', role: 'admin' });
  const key = await operator('POST', `/members/${admin.id}/api-keys`, { name: 'admin key' });
  return { org, boss, bossKey: bossKey.key as string, admin, key: key.key as string, keyId: key.id as string };
}

/** Calls node 2 until `done(status)` holds; answers the time from `since`, polling every 20 ms. */
async function pollNode2(path: string, key: string, done: (status: number) => boolean, since: number): Promise<number> {
  for (;;) {
    const { status } = await http(node2.base, 'GET', path, { token: key });
    const elapsed = performance.now() - since;
    if (done(status)) return elapsed;
    if (elapsed > 5 * BOUND_MS) throw new Error(`node 2 still answers ${status} on ${path} after ${Math.round(elapsed)} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function warm(path: string, key: string, status: number) {
  for (let i = 0; i < 3; i++) assert.equal((await http(node2.base, 'GET', path, { token: key })).status, status);
}

describe('propagation across two Weir processes on one PostgreSQL', { skip }, () => {
  it('node 2 really answers from its cache: a change written without a NOTIFY stays unseen until one arrives', async (t) => {
    const { admin, key } = await tenant();
    await warm('/v1/audit-log', key, 200);
    const sql = new pg.Client({ connectionString: store.env.DATABASE_URL });
    await sql.connect();
    try {
      await sql.query(`update members set role = 'viewer' where id = $1`, [admin.id]);
      await new Promise((r) => setTimeout(r, 200));
      assert.equal((await http(node2.base, 'GET', '/v1/audit-log', { token: key })).status, 200, 'the cached context still says admin');
      const since = performance.now();
      await sql.query(`select pg_notify('weir_auth', 'test')`);
      const ms = await pollNode2('/v1/audit-log', key, (s) => s === 403, since);
      t.diagnostic(`a bare NOTIFY flushed node 2's cache after ${ms.toFixed(1)} ms`);
    } finally {
      await sql.end();
    }
  });

  it('a demoted creator loses a permission on the other node within 1 second (403)', async (t) => {
    const { admin, key } = await tenant();
    await warm('/v1/audit-log', key, 200);
    await operator('PATCH', `/members/${admin.id}`, { role: 'developer' });
    const ms = await pollNode2('/v1/audit-log', key, (s) => s === 403, performance.now());
    t.diagnostic(`demotion seen by node 2 after ${ms.toFixed(1)} ms`);
    assert.ok(ms < BOUND_MS, `${ms} ms`);
  });

  it('a deactivated creator’s key stops on the other node within 1 second (401)', async (t) => {
    const { admin, key } = await tenant();
    await warm('/v1/me', key, 200);
    await operator('PATCH', `/members/${admin.id}`, { active: false });
    const ms = await pollNode2('/v1/me', key, (s) => s === 401, performance.now());
    t.diagnostic(`deactivation seen by node 2 after ${ms.toFixed(1)} ms`);
    assert.ok(ms < BOUND_MS, `${ms} ms`);
  });

  it('a revoked key stops on the other node within 1 second (401)', async (t) => {
    const { key, keyId } = await tenant();
    await warm('/v1/me', key, 200);
    await operator('DELETE', `/api-keys/${keyId}`);
    const ms = await pollNode2('/v1/me', key, (s) => s === 401, performance.now());
    t.diagnostic(`revocation seen by node 2 after ${ms.toFixed(1)} ms`);
    assert.ok(ms < BOUND_MS, `${ms} ms`);
  });

  it('narrowed scopes apply on the other node within 1 second (403)', async (t) => {
    const { key, keyId, bossKey } = await tenant();
    await warm('/v1/members', key, 200);
    const res = await http(node1.base, 'PATCH', `/v1/api-keys/${keyId}`, { token: bossKey, body: { access_mode: 'custom', scopes: ['usage:read'] } });
    assert.equal(res.status, 200, JSON.stringify(res.json));
    const ms = await pollNode2('/v1/members', key, (s) => s === 403, performance.now());
    t.diagnostic(`scope change seen by node 2 after ${ms.toFixed(1)} ms`);
    assert.ok(ms < BOUND_MS, `${ms} ms`);
  });

  it('a promotion applies on the other node within 1 second too', async (t) => {
    const org = await operator('POST', '/organizations', { name: 'Promo' });
    const v = await operator('POST', `/organizations/${org.id}/members`, { email: 'v@example.com', role: 'viewer' });
    const key = (await operator('POST', `/members/${v.id}/api-keys`, { name: 'v' })).key;
    await warm('/v1/audit-log', key, 403);
    await operator('PATCH', `/members/${v.id}`, { role: 'admin' });
    const ms = await pollNode2('/v1/audit-log', key, (s) => s === 200, performance.now());
    t.diagnostic(`promotion seen by node 2 after ${ms.toFixed(1)} ms`);
    assert.ok(ms < BOUND_MS, `${ms} ms`);
  });
});

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { onPostgres } from '../helpers/db.ts';
import { freshStore, http, startWeirProcess, type Store, type WeirProcess } from '../helpers/weir-process.ts';

// Role, scope and revocation changes reach every node: two real Weir
// processes on one PostgreSQL, each caching keys; a change made through
// node 1 must show on node 2, whose cache was warm. These tests assert that
// it happens (polling until it does, failing after WAIT_MS instead of
// hanging); how fast it happens is measured by `npm run bench:propagation`
// (bench/propagation.ts), not asserted here: a wall-clock bound fails on a
// busy machine without anything being wrong.

const skip = !onPostgres && 'PostgreSQL only: the embedded database is one process';
const TOKEN = 'propagation-operator-token';
// below the key cache's 30 s TTL: a change seen within it was carried by a NOTIFY, not by age
const WAIT_MS = 20_000;
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

/** Calls node 2 until `done(status)` holds, polling every 20 ms; fails after WAIT_MS. */
async function pollNode2(path: string, key: string, done: (status: number) => boolean): Promise<void> {
  const since = performance.now();
  for (;;) {
    const { status } = await http(node2.base, 'GET', path, { token: key });
    if (done(status)) return;
    const elapsed = performance.now() - since;
    if (elapsed > WAIT_MS) throw new Error(`node 2 still answers ${status} on ${path} after ${Math.round(elapsed)} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function warm(path: string, key: string, status: number) {
  for (let i = 0; i < 3; i++) assert.equal((await http(node2.base, 'GET', path, { token: key })).status, status);
}

describe('propagation across two Weir processes on one PostgreSQL', { skip }, () => {
  it('node 2 really answers from its cache: a change written without a NOTIFY stays unseen until one arrives', async () => {
    const { admin, key } = await tenant();
    await warm('/v1/audit-log', key, 200);
    const sql = new pg.Client({ connectionString: store.env.DATABASE_URL });
    await sql.connect();
    try {
      await sql.query(`update members set role = 'viewer' where id = $1`, [admin.id]);
      await new Promise((r) => setTimeout(r, 200));
      assert.equal((await http(node2.base, 'GET', '/v1/audit-log', { token: key })).status, 200, 'the cached context still says admin');
      await sql.query(`select pg_notify('weir_auth', 'test')`);
      await pollNode2('/v1/audit-log', key, (s) => s === 403);
    } finally {
      await sql.end();
    }
  });

  it('a demoted creator loses a permission on the other node (403)', async () => {
    const { admin, key } = await tenant();
    await warm('/v1/audit-log', key, 200);
    await operator('PATCH', `/members/${admin.id}`, { role: 'developer' });
    await pollNode2('/v1/audit-log', key, (s) => s === 403);
  });

  it('a deactivated creator’s key stops on the other node (401)', async () => {
    const { admin, key } = await tenant();
    await warm('/v1/me', key, 200);
    await operator('PATCH', `/members/${admin.id}`, { active: false });
    await pollNode2('/v1/me', key, (s) => s === 401);
  });

  it('a revoked key stops on the other node (401)', async () => {
    const { key, keyId } = await tenant();
    await warm('/v1/me', key, 200);
    await operator('DELETE', `/api-keys/${keyId}`);
    await pollNode2('/v1/me', key, (s) => s === 401);
  });

  it('narrowed scopes apply on the other node (403)', async () => {
    const { key, keyId, bossKey } = await tenant();
    await warm('/v1/members', key, 200);
    const res = await http(node1.base, 'PATCH', `/v1/api-keys/${keyId}`, { token: bossKey, body: { access_mode: 'custom', scopes: ['usage:read'] } });
    assert.equal(res.status, 200, JSON.stringify(res.json));
    await pollNode2('/v1/members', key, (s) => s === 403);
  });

  it('a promotion applies on the other node too', async () => {
    const org = await operator('POST', '/organizations', { name: 'Promo' });
    const v = await operator('POST', `/organizations/${org.id}/members`, { email: 'v@example.com', role: 'viewer' });
    const key = (await operator('POST', `/members/${v.id}/api-keys`, { name: 'v' })).key;
    await warm('/v1/audit-log', key, 403);
    await operator('PATCH', `/members/${v.id}`, { role: 'admin' });
    await pollNode2('/v1/audit-log', key, (s) => s === 200);
  });
});

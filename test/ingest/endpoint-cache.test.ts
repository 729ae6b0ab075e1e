import assert from 'node:assert/strict';
import { after, before, beforeEach, test } from 'node:test';
import pino from 'pino';
import type { Db } from '../../src/db/db.ts';
import { migrate } from '../../src/db/migrate.ts';
import { openPostgres } from '../../src/db/postgres.ts';
import { createEndpoint, ENDPOINTS_CHANNEL } from '../../src/endpoints/endpoints.ts';
import { EndpointCache } from '../../src/ingest/endpoint-cache.ts';
import { startIngest, type IngestListener } from '../../src/ingest/server.ts';
import { DEFAULT_PLANS } from '../../src/orgs/plans.ts';
import { buildTestApp, call, seedOrg, testConfig, type TestApp } from '../helpers/app.ts';
import { onPostgres, openTestDb, type TestDb } from '../helpers/db.ts';
import { send } from './harness.ts';

let t: TestDb;
before(async () => {
  t = await openTestDb();
});
beforeEach(() => t.reset());
after(() => t.close());

async function newEndpoint(db: Db) {
  const s = await seedOrg(db);
  const r = await createEndpoint(db, DEFAULT_PLANS, s.org.id, { name: 'e', createdBy: s.memberId });
  assert.ok(r.ok);
  return { ...s, endpoint: r.endpoint };
}

async function eventually(check: () => Promise<boolean>, what: string, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.fail(`timed out waiting for ${what}`);
}

test('the cache serves repeated lookups, and a NOTIFY of the slug evicts it', async () => {
  const { endpoint } = await newEndpoint(t.db);
  const cache = new EndpointCache(t.db);
  await cache.start();
  try {
    assert.equal((await cache.lookup(endpoint.slug))?.paused, false);
    // Changed behind the cache's back (no notification): the cached answer stays.
    await t.db.query('update endpoints set paused = true where id = $1', [endpoint.id]);
    assert.equal((await cache.lookup(endpoint.slug))?.paused, false, 'served from the cache');
    assert.equal((await cache.lookup(endpoint.slug, { fresh: true }))?.paused, true, 'fresh bypasses it');
    await t.db.query('update endpoints set paused = false where id = $1', [endpoint.id]);
    await t.db.query('select pg_notify($1, $2)', [ENDPOINTS_CHANNEL, endpoint.slug]);
    await eventually(async () => (await cache.lookup(endpoint.slug))?.paused === false, 'the notification to evict the slug');
  } finally {
    await cache.stop();
  }
});

test('an unknown slug is cached as unknown until the endpoint is created with it', async () => {
  const s = await seedOrg(t.db);
  const cache = new EndpointCache(t.db);
  await cache.start();
  try {
    assert.equal(await cache.lookup('preknownslug0001'), undefined);
    const r = await createEndpoint(t.db, DEFAULT_PLANS, s.org.id, { name: 'e', createdBy: null }, () => 'preknownslug0001');
    assert.ok(r.ok);
    await eventually(async () => (await cache.lookup('preknownslug0001'))?.id === r.endpoint.id, 'the creation notification');
  } finally {
    await cache.stop();
  }
});

test('when the LISTEN connection drops, the cache is bypassed and then emptied on reconnect', { skip: !onPostgres && 'PGlite listens in-process and never disconnects' }, async () => {
  // Created before the cache listens, so its creation NOTIFY cannot land in the middle.
  const { endpoint } = await newEndpoint(t.db);
  const db = await openPostgres(t.url!, { poolSize: 2 });
  const cache = new EndpointCache(db);
  await cache.start();
  try {
    assert.equal((await cache.lookup(endpoint.slug))?.paused, false);
    await t.db.query('update endpoints set paused = true where id = $1', [endpoint.id]);
    assert.equal((await cache.lookup(endpoint.slug))?.paused, false, 'cached');
    await t.db.query(`select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and query ilike 'listen%'`);
    await eventually(async () => (await cache.lookup(endpoint.slug))?.paused === true, 'a fresh answer while disconnected');
    await eventually(async () => db.listening(), 'the listener to reconnect', 10_000);
    assert.equal((await cache.lookup(endpoint.slug))?.paused, true, 'nothing stale survives the reconnect');
  } finally {
    await cache.stop();
    await db.close();
  }
});

test('pause, unpause and delete on one node take effect on the very next request to another node', async () => {
  // Two nodes: an API node and an ingest node, each with its own pool and
  // LISTEN connection on PostgreSQL (one process shares PGlite).
  const ingestDb = onPostgres ? await openPostgres(t.url!, { poolSize: 4 }) : t.db;
  let api: TestApp | undefined;
  let ingest: IngestListener | undefined;
  try {
    if (onPostgres) await migrate(ingestDb);
    api = await buildTestApp(t.db);
    ingest = await startIngest({ db: ingestDb, config: testConfig(), logger: pino({ level: 'silent' }) }, 0);
    const s = await seedOrg(t.db);
    const e = (await call(api.app, 'POST', '/v1/endpoints', { key: s.key, body: { name: 'x' } })).json.data;
    const hit = () => send(ingest!.port, 'POST', `/h/${e.slug}`, { body: 'x' }).then((r) => r.status);
    for (let round = 0; round < 3; round++) {
      assert.equal(await hit(), 200);
      assert.equal(await hit(), 200, 'served with a warm cache');
      await call(api.app, 'PATCH', `/v1/endpoints/${e.id}`, { key: s.key, body: { paused: true } });
      assert.equal(await hit(), 423);
      await call(api.app, 'PATCH', `/v1/endpoints/${e.id}`, { key: s.key, body: { paused: false } });
    }
    await call(api.app, 'DELETE', `/v1/endpoints/${e.id}`, { key: s.key });
    assert.equal(await hit(), 404);
  } finally {
    await ingest?.close();
    await api?.close();
    if (onPostgres) await ingestDb.close();
  }
});

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, beforeEach, test } from 'node:test';
import { newId } from '../../src/db/ids.ts';
import { createEndpoint } from '../../src/endpoints/endpoints.ts';
import { storeCaptures } from '../../src/ingest/store.ts';
import { DEFAULT_PLANS } from '../../src/orgs/plans.ts';
import { idFloor, idTime } from '../../src/requests/capture-ids.ts';
import { getCapture, type Capture } from '../../src/requests/captures.ts';
import { seedOrg } from '../helpers/app.ts';
import { openTestDb, type TestDb } from '../helpers/db.ts';
import { idAt } from './fixtures.ts';

let t: TestDb;
before(async () => {
  t = await openTestDb();
});
beforeEach(() => t.reset());
after(() => t.close());

// The capture statement runs as a named statement on the database itself
// (on PGlite: its own protocol path, bodies in binary) and as a plain one
// inside a transaction (PGlite ignores the name there): both must be exact.
const variants: Array<[string, (caps: Capture[]) => Promise<unknown>]> = [
  ['stored on the database (named statement)', (caps) => storeCaptures(t.db, caps)],
  ['stored inside a transaction (unnamed)', (caps) => t.db.transaction((tx) => storeCaptures(tx, caps))],
];

for (const [variant, store] of variants) test(`a capture group ${variant} round-trips every column byte-exact on this driver`, async () => {
  const s = await seedOrg(t.db);
  const r = await createEndpoint(t.db, DEFAULT_PLANS, s.org.id, { name: 'e', createdBy: null });
  assert.ok(r.ok);
  const bodies = [Buffer.alloc(0), Buffer.from([0, 0x5c, 0x22, 0x7b, 0x2c, 0x7d, 0xff]), randomBytes(1024 * 1024), Buffer.from('NULL'), Buffer.from('\\x00')];
  const caps: Capture[] = bodies.map((body, i) => {
    const id = newId();
    return {
      id,
      organization_id: s.org.id,
      endpoint_id: r.endpoint.id,
      received_at: new Date(idTime(id)),
      method: ['POST', 'GET', 'PUT', 'DELETE', 'PATCH'][i],
      path: ['', '/a b', '/"quoted"/{x,y}', '/NULL', '/é\u00ff'][i],
      query: ['', 'a=1&a=2', 'x="1",y={}', 'NULL', '%00'][i],
      headers: [[`X-${i}`, 'v"\\{},'], ['x-dup', 'NULL'], ['Ü', '\u00e9\u00ff']],
      body,
      body_size: body.length,
      content_type: i % 2 ? null : 'application/octet-stream',
      source_ip: i % 2 ? null : '2001:db8::1',
    };
  });
  assert.deepEqual(await store(caps), caps.map(() => 'stored'));
  for (const c of caps) {
    const got = await getCapture(t.db, s.org.id, c.id);
    assert.ok(got);
    assert.ok(got.body.equals(c.body), `body ${c.id}`);
    assert.equal(got.body_size, c.body.length);
    assert.deepEqual(
      [got.method, got.path, got.query, got.headers, got.content_type, got.source_ip, got.received_at.getTime()],
      [c.method, c.path, c.query, c.headers, c.content_type, c.source_ip, c.received_at.getTime()],
    );
  }
  assert.equal(await getCapture(t.db, '00000000-0000-7000-8000-000000000000', caps[0].id), undefined, 'scoped by organization');
});

test('capture ids carry their millisecond, and idFloor bounds every id of a millisecond', () => {
  const ms = Date.UTC(2030, 0, 2, 3, 4, 5, 678);
  for (let i = 0; i < 100; i++) {
    const id = idAt(ms);
    assert.equal(idTime(id), ms);
    assert.ok(id >= idFloor(ms) && id < idFloor(ms + 1));
  }
  const now = Date.now();
  assert.ok(Math.abs(idTime(newId(now)) - now) <= 1);
});

test('newest-first pages of an endpoint read its index backwards, without a sort', async () => {
  const s = await seedOrg(t.db);
  const r = await createEndpoint(t.db, DEFAULT_PLANS, s.org.id, { name: 'e', createdBy: null });
  assert.ok(r.ok);
  const plan = await t.db.transaction(async (tx) => {
    // On a nearly empty table the planner would rightly prefer a scan and a
    // sort; this asks which index plan it has when a scan is not an option.
    await tx.exec('set local enable_seqscan = off; set local enable_bitmapscan = off');
    const { rows } = await tx.query<{ 'QUERY PLAN': string }>(
      'explain select id from captured_requests where endpoint_id = $1::uuid and organization_id = $2::uuid and id < $3::uuid order by id desc limit 26',
      [r.endpoint.id, s.org.id, newId()],
    );
    return rows.map((row) => row['QUERY PLAN']).join('\n');
  });
  assert.match(plan, /Index Scan Backward using captured_requests_\w*endpoint/);
  assert.doesNotMatch(plan, /Sort/);
});

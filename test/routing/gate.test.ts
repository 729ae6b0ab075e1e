import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Queryable } from '../../src/db/db.ts';
import { createOrganization } from '../../src/orgs/organizations.ts';
import { FilterGate, type RoutedDelivery } from '../../src/routing/apply.ts';
import { openTestDb, type TestDb } from '../helpers/db.ts';
import { insertEndpoint, insertForwardDestination } from '../helpers/fixtures.ts';

// The delivery worker's FilterGate (src/routing/apply.ts) against a real
// database: a claim names only the filter's version, and the gate reads the
// filter itself once per destination version; an edit applies.

let t: TestDb;
before(async () => {
  t = await openTestDb();
});
after(() => t.close());

/** The database, counting the filter reads sent through it. */
function counting(db: Queryable): Queryable & { reads: number } {
  const c = {
    reads: 0,
    query: ((text: string, params?: unknown[]) => {
      if (text.includes('from forward_destinations')) c.reads++;
      return db.query(text, params);
    }) as Queryable['query'],
    exec: (sql: string) => db.exec(sql),
  };
  return c;
}

async function version(id: string): Promise<string> {
  const { rows } = await t.db.query<{ v: string }>('select updated_at::text as v from forward_destinations where id = $1::uuid', [id]);
  return rows[0].v;
}

const body = (type: string) => Buffer.from(JSON.stringify({ type }));
const delivery = (destinationId: string, filterVersion: string | null, captureId: string, type: string): RoutedDelivery => ({
  id: `d-${captureId}`,
  leaseId: 'l',
  forwardDestinationId: destinationId,
  filterVersion,
  capture: { id: captureId, headers: [['Content-Type', 'application/json']], path: '', query: '', body: body(type) },
});

describe('FilterGate', () => {
  test('reads a filter once per destination version; an edit applies to a delivery claimed with the older version; no version, no read', async () => {
    const org = await createOrganization(t.db, { name: 'G', plan: 'business', region: 'us' });
    const e = await insertEndpoint(t.db, org.id);
    const fd = await insertForwardDestination(t.db, e, { url: 'https://x.example.com' });
    await t.db.query(`update forward_destinations set filter = '{"body": {"type": "a"}}'::jsonb where id = $1::uuid`, [fd.id]);
    const v1 = await version(fd.id);
    const db = counting(t.db);
    const gate = new FilterGate(db);

    assert.equal((await gate.check(delivery(fd.id, v1, 'c1', 'a'))).matches, true);
    const second = gate.check(delivery(fd.id, v1, 'c2', 'b'));
    assert.ok(!(second instanceof Promise), 'a known version is checked without a read');
    assert.equal(second.reason, 'body.type: expected "a" got "b"');
    assert.equal(db.reads, 1);

    // edited after the claim: the delivery names v1, the gate already knows v1 ...
    await t.db.query(`update forward_destinations set filter = '{"body": {"type": "b"}}'::jsonb, updated_at = now() + interval '1 second' where id = $1::uuid`, [fd.id]);
    const v2 = await version(fd.id);
    assert.notEqual(v2, v1);
    // ... and the next claim names v2: read once, and the edit applies
    assert.equal((await gate.check(delivery(fd.id, v2, 'c3', 'b'))).matches, true);
    assert.equal((await gate.check(delivery(fd.id, v2, 'c4', 'a'))).matches, false);
    assert.equal(db.reads, 2);

    // a filter removed between the claim and the read: the current one (none) forwards everything
    await t.db.query(`update forward_destinations set filter = null, updated_at = now() + interval '2 seconds' where id = $1::uuid`, [fd.id]);
    const stale = new FilterGate(db);
    assert.equal((await stale.check(delivery(fd.id, v2, 'c5', 'zzz'))).matches, true);
    // no filter (or ignore_filter): the claim names no version, nothing is read
    assert.equal((await gate.check(delivery(fd.id, null, 'c6', 'zzz'))).matches, true);
    assert.equal(db.reads, 3);
  });
});

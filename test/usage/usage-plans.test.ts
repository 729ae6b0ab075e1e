import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createOrganization } from '../../src/orgs/organizations.ts';
import { liveUsageStatement } from '../../src/usage/usage.ts';
import { openTestDb, type TestDb } from '../helpers/db.ts';
import { insertCaptures, insertEndpoint, insertForwardDestination } from '../helpers/fixtures.ts';

// GET /v1/usage reads only the asking organization's rows: asserted on the
// plan, not timed, with another tenant holding 30,000 attempts and 30,000
// replays of the same day.

const N = 30_000;
let t: TestDb;
let quiet: { orgId: string; endpointId: string };

async function tenant(name: string): Promise<{ orgId: string; endpointId: string; deliveryId: string }> {
  const org = await createOrganization(t.db, { name, plan: 'starter', region: 'us' });
  const ep = await insertEndpoint(t.db, org.id);
  await insertForwardDestination(t.db, ep, { url: 'https://example.com/hook', retryEnabled: false });
  await insertCaptures(t.db, ep, [{ body: '{}' }]);
  const { rows } = await t.db.query<{ id: string }>('select id from deliveries where organization_id = $1::uuid', [org.id]);
  return { orgId: org.id, endpointId: ep.id, deliveryId: rows[0].id };
}

async function addAttempts(deliveryId: string, orgId: string, n: number): Promise<void> {
  await t.db.query(
    `insert into delivery_attempts (id, delivery_id, organization_id, attempt_number, started_at, duration_ms, status_code)
     select gen_random_uuid(), $1::uuid, $2::uuid, g, now() - (g % 3600) * interval '1 second', 10, 200 from generate_series(1, $3::int) g`,
    [deliveryId, orgId, n],
  );
  await t.db.query(
    `insert into deliveries (id, organization_id, request_id, request_received_at, endpoint_id, forward_destination_id, destination_type, url, status, replay_batch_id)
     select gen_random_uuid(), d.organization_id, d.request_id, d.request_received_at, d.endpoint_id, d.forward_destination_id, d.destination_type, d.url,
            'succeeded', gen_random_uuid()
       from deliveries d, generate_series(1, $2::int) where d.id = $1::uuid`,
    [deliveryId, n],
  );
}

before(async () => {
  t = await openTestDb();
  const busy = await tenant('Busy');
  const q = await tenant('Quiet');
  quiet = q;
  await addAttempts(busy.deliveryId, busy.orgId, N);
  await addAttempts(q.deliveryId, q.orgId, 5);
  await t.db.exec('analyze delivery_attempts; analyze deliveries');
});
after(() => t.close());

describe('usage plans', () => {
  it("counts one organization's attempts and replays through indexes led by its id, not every tenant's rows of the day", async () => {
    const now = Date.now();
    const s = liveUsageStatement(quiet.orgId, [quiet.endpointId], now - 86_400_000, now + 60_000);
    const { rows } = await t.db.query<{ 'QUERY PLAN': string }>(`explain ${s.text}`, s.params);
    const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
    assert.match(plan, /delivery_attempts_org_started/, plan);
    assert.match(plan, /deliveries_org_replayed/, plan);
    assert.doesNotMatch(plan, /Seq Scan on (delivery_attempts|deliveries)\b/, plan);
    assert.doesNotMatch(plan, /delivery_attempts_started\b|deliveries_replay_batch\b/, plan);

    const { rows: counts } = await t.db.query<{ attempted: string; replayed: string }>(s.text, s.params);
    assert.equal(Number(counts[0].attempted), 5);
    assert.equal(Number(counts[0].replayed), 5);
  });
});

import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { Db } from '../../src/db/db.ts';
import { correlateAll, CORRELATOR_LOCK_KEY } from '../../src/incidents/correlate.ts';
import { HostResolver } from '../../src/incidents/host-resolver.ts';
import { createOrganization } from '../../src/orgs/organizations.ts';
import { openTestDb, type TestDb } from '../helpers/db.ts';
import { insertCaptures, insertEndpoint, insertForwardDestination } from '../helpers/fixtures.ts';
import { incidents } from './helpers.ts';

const csv = join(tmpdir(), `weir-asn-dns-${process.pid}.csv`);
writeFileSync(csv, 'first_ip,last_ip,asn,asn_org\n192.0.2.0,192.0.2.255,64501,"Documentation Hosting"\n');

/** Failures of one destination as the completion statement records them, not yet correlated. */
async function recordFailures(db: Db, url: string, n = 2): Promise<void> {
  const org = await createOrganization(db, { name: 'Acme', plan: 'starter', region: 'us' });
  const ep = await insertEndpoint(db, org.id);
  const fd = await insertForwardDestination(db, ep, { url, retryEnabled: false });
  await insertCaptures(db, ep, Array.from({ length: n }, (_, i) => ({ body: `{"i":${i}}` })));
  await db.query(
    `insert into incident_failures (id, organization_id, delivery_id, request_id, request_received_at, endpoint_id, forward_destination_id,
                                    destination_type, scope_key, destination_url, status_code, error_class, error)
     select gen_random_uuid(), d.organization_id, d.id, d.request_id, d.request_received_at, d.endpoint_id, d.forward_destination_id,
            'https', 'fd:' || d.forward_destination_id::text, d.url, 503, 'http_status', 'HTTP 503'
       from deliveries d where d.forward_destination_id = $1::uuid`,
    [fd.id],
  );
}

async function within<T>(what: string, p: Promise<T>, ms = 10_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out: ${what}`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

describe('incident correlator DNS', () => {
  let t: TestDb;
  before(async () => (t = await openTestDb()));
  after(() => t.close());
  beforeEach(() => t.reset());

  it('looks hosts up before its transaction: a hung resolver holds neither the correlator lock nor a transaction', async () => {
    await recordFailures(t.db, 'https://slow.example.test/hook');
    let answer!: (address: string) => void;
    let asked = 0;
    const resolver = new HostResolver({
      timeoutMs: 60_000,
      lookup: () => {
        asked++;
        return new Promise((r) => (answer = r));
      },
    });
    const pass = correlateAll(t.db, { asnCsv: csv, resolver });
    await within('the lookup', (async () => {
      while (asked === 0) await new Promise((r) => setTimeout(r, 5));
    })());
    // Another node's correlator (or, on PGlite, any other statement) gets through while DNS hangs.
    const free = await within(
      'a transaction while the lookup hangs',
      t.db.transaction(async (tx) => (await tx.query<{ ok: boolean }>('select pg_try_advisory_xact_lock($1) as ok', [CORRELATOR_LOCK_KEY])).rows[0].ok),
    );
    assert.equal(free, true, 'the correlator lock is free while its lookup waits');
    answer('192.0.2.7');
    assert.equal(await within('the correlation', pass), 2);
    const [incident] = await incidents(t.db);
    assert.equal(Number(incident.asn), 64501);
    assert.equal(incident.asn_org, 'Documentation Hosting');
  });

  it('gives up on a host that does not answer within the timeout, and opens the incident without an ASN', async () => {
    await recordFailures(t.db, 'https://silent.example.test/hook');
    const resolver = new HostResolver({ timeoutMs: 20, lookup: () => new Promise(() => {}) });
    assert.equal(await within('the correlation', correlateAll(t.db, { asnCsv: csv, resolver })), 2);
    const [incident] = await incidents(t.db);
    assert.equal(incident.status, 'open');
    assert.equal(incident.asn, null);
  });

  it('caches answers: a host is looked up once across passes, and callers asking meanwhile share the lookup', async () => {
    const asked: string[] = [];
    const resolver = new HostResolver({ lookup: async (h) => (asked.push(h), '192.0.2.9') });
    await recordFailures(t.db, 'https://cached.example.test/a');
    await correlateAll(t.db, { asnCsv: csv, resolver });
    await recordFailures(t.db, 'https://cached.example.test/b');
    await correlateAll(t.db, { asnCsv: csv, resolver });
    assert.deepEqual(asked, ['cached.example.test']);
    assert.equal((await incidents(t.db)).filter((i) => Number(i.asn) === 64501).length, 2);

    const shared = new HostResolver({ lookup: async (h) => (asked.push(h), '192.0.2.10') });
    const answers = await Promise.all([shared.resolve('one.example.test'), shared.resolve('one.example.test')]);
    assert.deepEqual(answers, ['192.0.2.10', '192.0.2.10']);
    assert.equal(asked.filter((h) => h === 'one.example.test').length, 1);
  });

  it('forgets a name that did not resolve after the negative TTL, and asks again', async () => {
    let n = 0;
    const resolver = new HostResolver({ negativeTtlMs: 1, lookup: async () => (n++ === 0 ? undefined : '192.0.2.11') });
    assert.equal(await resolver.resolve('flaky.example.test'), undefined);
    await new Promise((r) => setTimeout(r, 5));
    assert.equal(await resolver.resolve('flaky.example.test'), '192.0.2.11');
  });
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Db, Queryable } from '../../src/db/db.ts';
import { claimDeliveries } from '../../src/delivery/claim.ts';
import { completeAttempts, type Outcome } from '../../src/delivery/complete.ts';
import { correlateAll } from '../../src/incidents/correlate.ts';
import { insertCaptures, insertEndpoint, insertForwardDestination } from '../helpers/fixtures.ts';
import { orgWithEndpoint, useWorkerTest } from '../delivery/helpers.ts';
import { failureRows, incidents } from './helpers.ts';

/** Claims every due delivery and records a 503 (retries off: final) for each, in statements of `batch`. */
async function failAll(db: Db, batch = 50): Promise<Outcome[]> {
  const all: Outcome[] = [];
  for (;;) {
    const { claimed } = await claimDeliveries(db, { destinationType: 'https', limit: batch, leaseMs: 60_000, node: 'test' });
    if (claimed.length === 0) return all;
    const outcomes: Outcome[] = claimed.map((d) => ({
      delivery: d,
      result: { startedAt: new Date(), durationMs: 1, url: d.url, statusCode: 503, errorClass: 'http_status', errorMessage: 'HTTP 503' },
      decision: { status: 'failed', reason: 'HTTP 503; retries are disabled for this destination' },
    }));
    await completeAttempts(db, outcomes, 'test');
    all.push(...outcomes);
  }
}

/** The database, except that inside a transaction the statement matching `crashOn` throws, as if the process died there. */
function crashingDb(db: Db, crashOn: RegExp): Db {
  const wrap = <T extends object>(target: T, override: (prop: string | symbol) => unknown): T =>
    new Proxy(target, {
      get(t, prop) {
        const o = override(prop);
        if (o !== undefined) return o;
        const v = Reflect.get(t, prop);
        return typeof v === 'function' ? v.bind(t) : v;
      },
    });
  return wrap(db, (prop) =>
    prop === 'transaction'
      ? <T>(fn: (tx: Queryable) => Promise<T>) =>
          db.transaction((tx) =>
            fn(
              wrap(tx, (p) =>
                p === 'query'
                  ? (text: string, params?: unknown[]) => {
                      if (crashOn.test(text)) throw new Error('simulated crash');
                      return tx.query(text, params);
                    }
                  : undefined,
              ),
            ),
          )
      : undefined,
  );
}

describe('incident durability', () => {
  const t = useWorkerTest();

  it('records a failure once, even when the same outcome is written again after its lease is gone', async () => {
    const ep = await orgWithEndpoint(t.db);
    await insertForwardDestination(t.db, ep, { url: 'https://127.0.0.1:9/x', retryEnabled: false });
    await insertCaptures(t.db, ep, [{ body: '1' }]);
    const [outcome] = await failAll(t.db);
    assert.deepEqual(await completeAttempts(t.db, [outcome], 'test'), new Set(), 'the lease no longer holds');
    assert.equal((await failureRows(t.db)).length, 1);
  });

  it('leaves the failures of a correlator that crashed mid-batch to the next one, counted once', async () => {
    const ep = await orgWithEndpoint(t.db);
    await insertForwardDestination(t.db, ep, { url: 'https://127.0.0.1:9/x', retryEnabled: false });
    await insertCaptures(t.db, ep, Array.from({ length: 30 }, (_, i) => ({ body: `{"i":${i}}` })));
    await failAll(t.db);
    // the crash comes after the incident was opened and counted, before the failures are assigned
    await assert.rejects(correlateAll(crashingDb(t.db, /set incident_id/)), /simulated crash/);
    assert.equal((await incidents(t.db)).length, 0, 'the opened incident was rolled back');
    assert.ok((await failureRows(t.db)).every((f) => f.incident_id === null), 'the failures wait in the outbox');
    assert.equal(await correlateAll(t.db), 30);
    const [incident] = await incidents(t.db);
    assert.equal(incident.failure_count, 30);
  });

  it('keeps exact counts while failures are recorded and several correlators run at once', async () => {
    // three endpoints forwarding to one URL: one incident whose endpoint_count must come out 3
    const ep = await orgWithEndpoint(t.db, 'https://127.0.0.1:9/x');
    const others = [await insertEndpoint(t.db, ep.organization_id, { forwardUrl: 'https://127.0.0.1:9/x' }), await insertEndpoint(t.db, ep.organization_id, { forwardUrl: 'https://127.0.0.1:9/x' })];
    const n = 600;
    await insertCaptures(t.db, ep, Array.from({ length: n - 2 }, (_, i) => ({ body: `{"i":${i}}` })));
    for (const o of others) await insertCaptures(t.db, o, [{ body: '{}' }]);
    let recording = true;
    const correlators = Array.from({ length: 3 }, async () => {
      while (recording) await correlateAll(t.db, { batchSize: 40 });
    });
    await failAll(t.db, 25);
    recording = false;
    await Promise.all(correlators);
    await correlateAll(t.db);
    const all = await incidents(t.db);
    assert.equal(all.length, 1, 'one incident');
    const { rows } = await t.db.query<{ n: number; e: number }>(
      `select count(*)::int as n, count(distinct endpoint_id)::int as e from incident_failures where incident_id = $1::uuid`,
      [all[0].id],
    );
    assert.deepEqual(rows[0], { n, e: 3 }, 'every failure is on the incident');
    assert.equal(all[0].failure_count, n);
    assert.equal(all[0].endpoint_count, 3);
  });
});

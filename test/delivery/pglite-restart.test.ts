import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { migrate } from '../../src/db/migrate.ts';
import { openPglite } from '../../src/db/pglite.ts';
import { claimDeliveries } from '../../src/delivery/claim.ts';
import { insertCaptures } from '../helpers/fixtures.ts';
import { startReceiver, testCa } from '../helpers/https.ts';
import { startWeirProcess } from '../helpers/weir-process.ts';
import { deliveries, orgWithEndpoint } from './helpers.ts';

// The embedded database's own folder (WEIR_DATA_DIR), whichever database the
// suite runs on: what a process that died mid-forward leaves behind.

test('weir serve on PGlite forwards at once what a dead process held leased, without waiting for the lease to expire', { timeout: 120_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'weir-restart-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const rx = await startReceiver();
  t.after(() => rx.close());

  // A capture whose delivery a process claimed, leased for an hour, and then died.
  const db = await openPglite(dir);
  let captureId: string;
  try {
    await migrate(db);
    const ep = await orgWithEndpoint(db, `${rx.url}/hook`);
    [{ id: captureId }] = await insertCaptures(db, ep, [{ body: 'held by the dead' }]);
    const { claimed } = await claimDeliveries(db, { destinationType: 'https', limit: 10, leaseMs: 3600_000, node: 'dead-node' });
    assert.equal(claimed.length, 1);
    assert.deepEqual((await deliveries(db)).map((d) => d.status), ['in_flight']);
  } finally {
    await db.close();
  }

  const weir = await startWeirProcess({ WEIR_DATA_DIR: dir, WEIR_ALLOW_PRIVATE_DESTINATIONS: '1', NODE_EXTRA_CA_CERTS: testCa().caFile });
  t.after(() => weir.stop());
  // the lease has an hour to run: only its release at start lets this arrive
  const [got] = await rx.waitFor(1);
  assert.equal(got.headers['webhook-id'], `msg_${captureId}`);
  assert.equal(got.body.toString(), 'held by the dead');
});

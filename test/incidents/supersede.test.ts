import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { listForwards } from '../../src/delivery/forwards.ts';
import { replayRequest } from '../../src/delivery/replay.ts';
import { correlateAll } from '../../src/incidents/correlate.ts';
import { getIncidentDetail } from '../../src/incidents/incidents.ts';
import { queueIncidentReplay } from '../../src/incidents/replay.ts';
import { SYSTEM_ACTOR_ID } from '../../src/incidents/store.ts';
import { insertCaptures, insertForwardDestination } from '../helpers/fixtures.ts';
import { deliveries, orgWithEndpoint, startTestWorker, useWorkerTest, waitUntil } from '../delivery/helpers.ts';
import { failureRows, incidents } from './helpers.ts';

/** Issue 28, item 2: a replay that delivers a request ends the same pair's waiting retries. */
describe('replays supersede waiting retries', () => {
  const t = useWorkerTest();

  /** A capture whose first attempt failed (500) and whose retry waits 10 minutes; the receiver answers 200 from then on. */
  async function retryingCapture() {
    const state = { status: 500 };
    const rx = await t.receiver({ reply: () => ({ status: state.status }) });
    const ep = await orgWithEndpoint(t.db);
    const fd = await insertForwardDestination(t.db, ep, { url: rx.url, retrySchedule: [600] });
    const [capture] = await insertCaptures(t.db, ep, [{ body: '{"id":"evt_1"}' }]);
    t.worker = await startTestWorker(t.db);
    await rx.waitFor(1);
    const [original] = await waitUntil(async () => {
      const rows = await deliveries(t.db);
      return rows[0]?.status === 'pending' && rows[0].attempt_count === 1 && rows;
    }, 'the retry to be scheduled');
    state.status = 200;
    return { rx, ep, fd, capture, original };
  }

  it('ends the pending retry as superseded when a single-request replay succeeds, shown in the forwards list', async () => {
    const { rx, ep, fd, capture, original } = await retryingCapture();
    const replay = await replayRequest(t.db, { organizationId: ep.organization_id, requestId: capture.id, destinationId: fd.id });
    assert.ok(replay.ok);
    await waitUntil(async () => (await deliveries(t.db, 'id = $1::uuid', [original.id]))[0].status === 'superseded' || undefined, 'the retry to be superseded');
    const forwards = await listForwards(t.db, { organizationId: ep.organization_id, requestId: capture.id, limit: 10 });
    assert.ok(forwards.ok);
    const byId = new Map(forwards.forwards.map((f) => [f.id, f]));
    assert.equal(byId.get(replay.deliveries[0].id)!.status, 'succeeded');
    const old = byId.get(original.id)!;
    assert.equal(old.status, 'superseded');
    assert.equal(old.next_attempt_at, null, 'no retry is announced any more');
    assert.match(old.last_error!, new RegExp(`superseded: replay delivery ${replay.deliveries[0].id}`));
    assert.equal(old.attempts.length, 1, 'superseded without being sent again');
    assert.equal(rx.received.length, 2, 'the receiver got the original attempt and the replay, no third');
    assert.ok((await failureRows(t.db))[0].recovered_at, 'the failure is recovered');
  });

  it('leaves a waiting delivery of another destination alone, and a replay that fails supersedes nothing', async () => {
    const state = { a: 500, b: 500 };
    const rx = await t.receiver({ reply: (req) => ({ status: req.url.endsWith('/a') ? state.a : state.b }) });
    const ep = await orgWithEndpoint(t.db);
    const a = await insertForwardDestination(t.db, ep, { url: `${rx.url}/a`, retrySchedule: [600] });
    await insertForwardDestination(t.db, ep, { url: `${rx.url}/b`, retrySchedule: [600] });
    const [capture] = await insertCaptures(t.db, ep, [{ body: '{}' }]);
    t.worker = await startTestWorker(t.db);
    await waitUntil(async () => (await deliveries(t.db)).filter((d) => d.status === 'pending' && d.attempt_count === 1).length === 2 || undefined, 'both retries scheduled');
    // the replay to /a fails: its pair's retry keeps waiting
    const failing = await replayRequest(t.db, { organizationId: ep.organization_id, requestId: capture.id, destinationId: a.id });
    assert.ok(failing.ok);
    await waitUntil(async () => (await deliveries(t.db, 'id = $1::uuid', [failing.deliveries[0].id]))[0].attempt_count === 1 || undefined, 'the failing replay');
    assert.equal((await deliveries(t.db, `status = 'superseded'`)).length, 0);
    state.a = 200;
    const ok = await replayRequest(t.db, { organizationId: ep.organization_id, requestId: capture.id, destinationId: a.id });
    assert.ok(ok.ok);
    await waitUntil(async () => (await deliveries(t.db, 'id = $1::uuid', [ok.deliveries[0].id]))[0].status === 'succeeded' || undefined, 'the replay to succeed');
    const rows = await deliveries(t.db);
    const superseded = rows.filter((d) => d.status === 'superseded');
    assert.equal(superseded.length, 2, "/a's original retry and the earlier failed replay's retry");
    assert.ok(superseded.every((d) => d.forward_destination_id === a.id));
    assert.equal(rows.filter((d) => d.forward_destination_id !== a.id && d.status === 'pending').length, 1, "/b's retry still waits");
  });

  it('lets an incident replay take the place of a delivery that is still retrying, instead of running beside it', async () => {
    const { rx, ep, original } = await retryingCapture();
    await correlateAll(t.db);
    const [incident] = await incidents(t.db);
    const before = (await getIncidentDetail(t.db, ep.organization_id, incident.id))!;
    assert.equal(before.failures[0].status, 'retrying');
    assert.equal(before.unreplayed_count, 1, 'a retrying failure can be replayed');
    const r = await queueIncidentReplay(t.db, { organizationId: ep.organization_id, incidentId: incident.id, requestsPerMinute: 6000, memberId: SYSTEM_ACTOR_ID, plan: { name: 'business', incidentReplay: true } });
    assert.ok(r.ok);
    const [old] = await deliveries(t.db, 'id = $1::uuid', [original.id]);
    assert.equal(old.status, 'superseded', 'ended when the replay was queued');
    assert.match(old.last_error!, new RegExp(`incident replay batch ${r.replayBatchId} took its place`));
    await waitUntil(async () => (await failureRows(t.db))[0].recovered_at || undefined, 'the replay to deliver it');
    const after = (await getIncidentDetail(t.db, ep.organization_id, incident.id))!;
    assert.equal(after.failures[0].status, 'recovered');
    assert.equal(rx.received.length, 2, 'the original attempt and the replay only');
  });
});

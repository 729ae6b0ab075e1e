import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { replayRequest } from '../../src/delivery/replay.ts';
import { correlateAll } from '../../src/incidents/correlate.ts';
import { getIncidentDetail } from '../../src/incidents/incidents.ts';
import { resolveRecovered, setIncidentStatus } from '../../src/incidents/lifecycle.ts';
import { queueIncidentReplay } from '../../src/incidents/replay.ts';
import { startIncidents } from '../../src/incidents/start.ts';
import { forwardUrlDestinationId, SYSTEM_ACTOR_ID } from '../../src/incidents/store.ts';
import { createOrganization } from '../../src/orgs/organizations.ts';
import { insertCaptures, insertEndpoint, insertForwardDestination } from '../helpers/fixtures.ts';
import { deliveries, orgWithEndpoint, silent, startTestWorker, useWorkerTest, waitForStatus, waitUntil } from '../delivery/helpers.ts';
import { failureRows, incidents, updates } from './helpers.ts';

const bodies = (n: number, tag = 'x') => Array.from({ length: n }, (_, i) => ({ body: `{"${tag}":${i}}` }));

describe('incident correlation', () => {
  const t = useWorkerTest();

  /** A destination (retries off) whose receiver answers `status` until recover(), and a running worker. */
  async function flakyDestination(status: number) {
    const state = { status };
    const rx = await t.receiver({ reply: () => ({ status: state.status }) });
    const ep = await orgWithEndpoint(t.db);
    const fd = await insertForwardDestination(t.db, ep, { url: rx.url, retryEnabled: false });
    t.worker = await startTestWorker(t.db);
    return { ep, fd, recover: () => (state.status = 200) };
  }

  it('records each final failure once, in the completion statement, and correlates them into one incident with exact counts', async () => {
    const rx = await t.receiver({ reply: () => ({ status: 503 }) });
    const ep = await orgWithEndpoint(t.db);
    const ep2 = await insertEndpoint(t.db, ep.organization_id);
    const fd = await insertForwardDestination(t.db, ep, { url: rx.url, name: 'billing', retryEnabled: false });
    await insertCaptures(t.db, ep, bodies(5));
    t.worker = await startTestWorker(t.db);
    await waitForStatus(t.db, ['failed'], 5);
    const recorded = await failureRows(t.db);
    assert.equal(recorded.length, 5, 'one failure per delivery');
    assert.ok(recorded.every((f) => f.incident_id === null && f.status_code === 503 && f.error_class === 'http_status'));

    assert.equal(await correlateAll(t.db), 5);
    assert.equal(await correlateAll(t.db), 0, 'correlating again finds nothing new');
    const [incident] = await incidents(t.db);
    assert.equal(incident.status, 'open');
    assert.equal(incident.failure_count, 5);
    assert.equal(incident.endpoint_count, 1);
    assert.equal(incident.destination_id, fd.id);
    assert.equal(incident.destination_name, 'billing');
    assert.match(incident.likely_cause, /5xx/);
    assert.equal(incident.is_recurring, false);
    const timeline = await updates(t.db, incident.id);
    assert.deepEqual(timeline.map((u) => u.is_system), [true, true]);
    assert.match(timeline[0].body, /opened/);
    assert.match(timeline[1].body, /Likely cause/);
    assert.ok(timeline.every((u) => u.author_id === SYSTEM_ACTOR_ID));

    // a second endpoint sharing the saved URL is another forward destination: its own scope
    await insertForwardDestination(t.db, ep2, { url: rx.url, retryEnabled: false });
    await insertCaptures(t.db, ep, bodies(2, 'y'));
    await insertCaptures(t.db, ep2, bodies(1, 'z'));
    await waitForStatus(t.db, ['failed'], 8);
    await correlateAll(t.db);
    const all = await incidents(t.db);
    assert.equal(all.length, 2);
    assert.equal(all[0].failure_count, 7, 'later failures join the open incident');
    assert.equal(all[1].failure_count, 1);
  });

  it('groups failures to a forward_url by URL across endpoints, with an id derived from the URL', async () => {
    const rx = await t.receiver({ reply: () => ({ status: 404 }) });
    const ep = await orgWithEndpoint(t.db, rx.url);
    const ep2 = await insertEndpoint(t.db, ep.organization_id, { forwardUrl: rx.url });
    await insertCaptures(t.db, ep, bodies(2));
    await insertCaptures(t.db, ep2, bodies(3));
    t.worker = await startTestWorker(t.db);
    await waitForStatus(t.db, ['failed'], 5);
    await correlateAll(t.db);
    const all = await incidents(t.db);
    assert.equal(all.length, 1);
    assert.equal(all[0].failure_count, 5);
    assert.equal(all[0].endpoint_count, 2);
    assert.equal(all[0].destination_id, forwardUrlDestinationId(ep.organization_id, rx.url));
    assert.equal(all[0].destination_name, `forward_url ${rx.url}`);
    assert.match(all[0].likely_cause, /rejects the requests with HTTP 404/);
  });

  it('records a delivery whose retries ran out (dead), and names a 429 with the Retry-After seen', async () => {
    const rx = await t.receiver({ reply: () => ({ status: 429, headers: { 'retry-after': '30' } }) });
    const ep = await orgWithEndpoint(t.db);
    await insertForwardDestination(t.db, ep, { url: rx.url, retrySchedule: [] });
    await insertCaptures(t.db, ep, bodies(2));
    t.worker = await startTestWorker(t.db);
    await waitForStatus(t.db, ['dead'], 2);
    await correlateAll(t.db);
    const [incident] = await incidents(t.db);
    assert.equal(incident.failure_count, 2);
    assert.equal(incident.likely_cause, 'Rate limited: the destination answers 429 with Retry-After 30 s.');
  });

  it('records a failed attempt that will be retried at once, as retrying, counts its delivery once, and marks it recovered when a retry succeeds', async () => {
    const state = { status: 500 };
    const rx = await t.receiver({ reply: () => ({ status: state.status }) });
    const ep = await orgWithEndpoint(t.db);
    await insertForwardDestination(t.db, ep, { url: rx.url, retrySchedule: [1, 1, 600] });
    await insertCaptures(t.db, ep, bodies(1));
    t.worker = await startTestWorker(t.db);
    await rx.waitFor(1);
    const [first] = await waitUntil(async () => ((await failureRows(t.db)) as any[]).length === 1 && failureRows(t.db), 'the first failure');
    assert.ok((first as any).next_attempt_at, 'the row says when the retry is due');
    assert.equal(await correlateAll(t.db), 1, 'an incident opens on the first failed attempt');
    const [incident] = await incidents(t.db);
    let detail = (await getIncidentDetail(t.db, ep.organization_id, incident.id))!;
    assert.equal(detail.failures[0].status, 'retrying');
    assert.ok(detail.failures[0].next_attempt_at);
    assert.deepEqual(await resolveRecovered(t.db, { quietMs: 0 }), [], 'a delivery still retrying keeps the incident open');

    // the second attempt fails too: the same row, newest error, still one failure
    await rx.waitFor(2);
    await waitUntil(async () => (await deliveries(t.db))[0].attempt_count === 2 || undefined, 'the second attempt recorded');
    assert.equal((await failureRows(t.db)).length, 1, 'one failure per delivery, not per attempt');
    assert.equal(await correlateAll(t.db), 0);
    assert.equal((await incidents(t.db))[0].failure_count, 1);

    state.status = 200;
    await waitForStatus(t.db, ['succeeded'], 1);
    const [recovered] = await failureRows(t.db);
    assert.ok(recovered.recovered_at, 'the retry that succeeded marks the failure recovered');
    detail = (await getIncidentDetail(t.db, ep.organization_id, incident.id))!;
    assert.equal(detail.failures[0].status, 'recovered');
    assert.equal(detail.failures[0].next_attempt_at, null);
    assert.equal(detail.unreplayed_count, 0, 'nothing left for an incident replay');
  });

  it('moves a retrying failure to failed when its retries run out, keeping its first failure time', async () => {
    const rx = await t.receiver({ reply: () => ({ status: 503 }) });
    const ep = await orgWithEndpoint(t.db);
    await insertForwardDestination(t.db, ep, { url: rx.url, retrySchedule: [1] });
    await insertCaptures(t.db, ep, bodies(1));
    t.worker = await startTestWorker(t.db);
    await waitUntil(async () => (await failureRows(t.db)).length === 1 || undefined, 'the first failure');
    const failedAt = ((await failureRows(t.db))[0] as any).failed_at;
    await correlateAll(t.db);
    await waitForStatus(t.db, ['dead'], 1);
    const rows = (await failureRows(t.db)) as any[];
    assert.equal(rows.length, 1);
    assert.equal(rows[0].next_attempt_at, null);
    assert.match(rows[0].error, /exhausted/);
    assert.equal(new Date(rows[0].failed_at).getTime(), new Date(failedAt).getTime());
    const [incident] = await incidents(t.db);
    assert.equal(incident.failure_count, 1);
    const detail = (await getIncidentDetail(t.db, ep.organization_id, incident.id))!;
    assert.equal(detail.failures[0].status, 'failed');
  });

  it('opens a recurring incident after a resolved one, and a fresh one outside the recurrence window', async () => {
    const { ep } = await flakyDestination(500);
    await insertCaptures(t.db, ep, bodies(1, 'a'));
    await waitForStatus(t.db, ['failed'], 1);
    await correlateAll(t.db);
    const [first] = await incidents(t.db);
    const member = '11111111-1111-4111-8111-111111111111';
    assert.equal((await setIncidentStatus(t.db, ep.organization_id, first.id, 'resolved', member)).ok, true);

    await insertCaptures(t.db, ep, bodies(1, 'b'));
    await waitForStatus(t.db, ['failed'], 2);
    await correlateAll(t.db);
    const second = (await incidents(t.db))[1];
    assert.equal(second.is_recurring, true);
    assert.equal(second.previous_incident_id, first.id);
    assert.equal(second.failure_count, 1);
    assert.match((await updates(t.db, second.id))[0].body, /recurred/);

    // resolved two days ago: outside the 24 h window, a fresh incident
    await setIncidentStatus(t.db, ep.organization_id, second.id, 'resolved', member);
    await t.db.query(`update incidents set resolved_at = now() - interval '2 days'`);
    await insertCaptures(t.db, ep, bodies(1, 'c'));
    await waitForStatus(t.db, ['failed'], 3);
    await correlateAll(t.db);
    const third = (await incidents(t.db))[2];
    assert.equal(third.is_recurring, false);
    assert.equal(third.previous_incident_id, null);
  });

  it('resolves by itself once the destination succeeds again after the quiet period, as the system', async () => {
    const { ep, recover } = await flakyDestination(502);
    await insertCaptures(t.db, ep, bodies(2));
    await waitForStatus(t.db, ['failed'], 2);
    await correlateAll(t.db);
    assert.deepEqual(await resolveRecovered(t.db, { quietMs: 0 }), [], 'no success yet: stays open');
    assert.deepEqual(await resolveRecovered(t.db, { quietMs: 60_000 }), []);

    recover();
    await insertCaptures(t.db, ep, bodies(1, 'ok'));
    await waitForStatus(t.db, ['succeeded'], 1);
    assert.deepEqual(await resolveRecovered(t.db, { quietMs: 60_000 }), [], 'within the quiet period: stays open');
    const [open] = await incidents(t.db);
    assert.deepEqual(await resolveRecovered(t.db, { quietMs: 0 }), [open.id]);
    const [incident] = await incidents(t.db);
    assert.equal(incident.status, 'resolved');
    assert.equal(incident.resolved_by, SYSTEM_ACTOR_ID);
    assert.ok(incident.resolved_at);
    const last = (await updates(t.db, incident.id)).at(-1)!;
    assert.equal(last.is_system, true);
    assert.match(last.body, /Resolved automatically/);
  });

  it('marks a failure whose request later succeeds (single-request replay) and leaves it out of an incident replay', async () => {
    const { ep, fd, recover } = await flakyDestination(500);
    const [capture] = await insertCaptures(t.db, ep, bodies(1));
    await waitForStatus(t.db, ['failed'], 1);
    await correlateAll(t.db);
    recover();
    const replay = await replayRequest(t.db, { organizationId: ep.organization_id, requestId: capture.id, destinationId: fd.id });
    assert.equal(replay.ok, true);
    await waitForStatus(t.db, ['succeeded'], 1);
    const [failure] = await failureRows(t.db);
    assert.ok(failure.recovered_at, 'marked recovered');
    const [incident] = await incidents(t.db);
    const r = await queueIncidentReplay(t.db, { organizationId: ep.organization_id, incidentId: incident.id, requestsPerMinute: 60, memberId: SYSTEM_ACTOR_ID, plan: { name: 'business', incidentReplay: true } });
    assert.deepEqual(r, { ok: false, reason: 'nothing_to_replay', message: 'This incident has no unreplayed failures left to replay.' });
  });

  it('updates the likely cause as the evidence changes, with a system update', async () => {
    const state = { status: 503 };
    const rx = await t.receiver({ reply: () => ({ status: state.status }) });
    const ep = await orgWithEndpoint(t.db);
    await insertForwardDestination(t.db, ep, { url: rx.url, retryEnabled: false });
    t.worker = await startTestWorker(t.db);
    await insertCaptures(t.db, ep, bodies(2, 'a'));
    await waitForStatus(t.db, ['failed'], 2);
    await correlateAll(t.db);
    state.status = 401;
    await insertCaptures(t.db, ep, bodies(10, 'b'));
    await waitForStatus(t.db, ['failed'], 12);
    await correlateAll(t.db);
    const [incident] = await incidents(t.db);
    assert.equal(incident.likely_cause, 'Credentials rejected: the destination answers 401.');
    const last = (await updates(t.db, incident.id)).at(-1)!;
    assert.equal(last.is_system, true);
    assert.equal(last.body, 'Likely cause changed: Credentials rejected: the destination answers 401.');
  });

  it('runs by itself on every node: the tick correlates new failures and resolves what recovered', async () => {
    const { ep, recover } = await flakyDestination(500);
    const running = startIncidents({ db: t.db, logger: silent, tickMs: 50, quietMs: 0, resolveEveryMs: 50 });
    try {
      await insertCaptures(t.db, ep, bodies(3));
      const opened = await waitUntil(async () => (await incidents(t.db)).find((i) => i.failure_count === 3), 'the tick to correlate 3 failures');
      assert.equal(opened.status, 'open');
      recover();
      await insertCaptures(t.db, ep, bodies(1, 'ok'));
      await waitUntil(async () => (await incidents(t.db))[0].status === 'resolved', 'the tick to resolve the incident');
    } finally {
      await running.stop();
    }
  });

  it('fills asn and asn_org from the operator CSV, and reads two failing destinations of one ASN as a provider outage', async () => {
    const csv = join(tmpdir(), `weir-asn-${process.pid}.csv`);
    writeFileSync(csv, 'first_ip,last_ip,asn,asn_org\n127.0.0.0,127.255.255.255,64500,"Loopback Hosting, Inc."\n');
    const rx = await t.receiver({ reply: () => ({ status: 503 }) });
    const org = await createOrganization(t.db, { name: 'Acme', plan: 'starter', region: 'us' });
    const ep = await insertEndpoint(t.db, org.id);
    await insertForwardDestination(t.db, ep, { url: `${rx.url}/a`, retryEnabled: false });
    await insertForwardDestination(t.db, ep, { url: `${rx.url}/b`, retryEnabled: false });
    await insertCaptures(t.db, ep, bodies(2));
    t.worker = await startTestWorker(t.db);
    await waitForStatus(t.db, ['failed'], 4);
    await correlateAll(t.db, { asnCsv: csv });
    const all = await incidents(t.db);
    assert.equal(all.length, 2, 'one incident per destination');
    for (const i of all) {
      assert.equal(Number(i.asn), 64500);
      assert.equal(i.asn_org, 'Loopback Hosting, Inc.');
      assert.equal(i.asn_destination_count, 2);
      assert.match(i.likely_cause, /2 destinations on AS64500 \(Loopback Hosting, Inc\.\) are failing at the same time: likely a provider outage/);
    }
  });
});

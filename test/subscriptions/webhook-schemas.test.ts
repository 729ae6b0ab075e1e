import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';
import { superviseReplayBatches } from '../../src/incidents/replay.ts';
import { EVENT_TYPES } from '../../src/subscriptions/event-types.ts';
import { call, seedOrg, useTestApp } from '../helpers/app.ts';
import { insertCaptures, insertEndpoint } from '../helpers/fixtures.ts';
import { startTestWorker, waitUntil } from '../delivery/helpers.ts';
import { seedIncident } from '../incidents/helpers.ts';
import { bodyOf, produceUntil, subscribe, useEventFixtures, verifies } from './helpers.ts';

/**
 * The `webhooks` section of /v1/openapi.json against real deliveries: one
 * subscription to every event type, each type produced the way the product
 * produces it, delivered by the event worker to a real HTTPS receiver on
 * loopback, and every body received validated against its type's schema.
 */
describe('webhooks in the OpenAPI document', () => {
  const t = useTestApp();
  const f = useEventFixtures();
  let forwards: DeliveryWorker | undefined;
  afterEach(async () => {
    await forwards?.stop(1000);
    forwards = undefined;
  });

  it('every event type a subscriber receives validates against its webhooks schema', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json();
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats.default(ajv);
    const validators = new Map(EVENT_TYPES.map((type) => [type, ajv.compile(doc.webhooks[type].post.requestBody.content['application/json'].schema)]));

    const s = await seedOrg(t.db, { plan: 'starter' });
    const receiver = await f.receiver();
    const destination = await f.receiver();
    const sub = await subscribe(t.app, s.key, { target_url: receiver.url, event_types: [...EVENT_TYPES] });

    // request.captured
    const endpoint = await insertEndpoint(t.db, s.org.id);
    await insertCaptures(t.db, endpoint, [{ body: '{"hello":"world"}', path: '/stripe' }, { body: Buffer.from([0xff, 0x00]), headers: [['content-type', 'application/octet-stream']] }]);
    await produceUntil(t.db, 2);
    // incident.opened and request.forward_failed (x2)
    const { incidentId } = await seedIncident(t.db, s.org.id, { n: 2, url: destination.url });
    // incident.updated: a status change and a note
    assert.equal((await call(t.app, 'PATCH', `/v1/incidents/${incidentId}`, { key: s.key, body: { status: 'investigating' } })).status, 200);
    assert.equal((await call(t.app, 'POST', `/v1/incidents/${incidentId}/updates`, { key: s.key, body: { body: 'Looking.' } })).status, 201);
    // replay.completed
    const queued = await call(t.app, 'POST', `/v1/incidents/${incidentId}/replay`, { key: s.key, body: { requests_per_minute: 6000 } });
    assert.equal(queued.status, 200, JSON.stringify(queued.json));
    forwards = await startTestWorker(t.db);
    await destination.waitFor(2);
    await waitUntil(async () => (await superviseReplayBatches(t.db)).finished.includes(queued.json.data.replay_batch_id), 'the replay batch to finish');
    // incident.resolved
    assert.equal((await call(t.app, 'PATCH', `/v1/incidents/${incidentId}`, { key: s.key, body: { status: 'resolved' } })).status, 200);

    await f.worker(t.db);
    const got = await receiver.waitFor(9);
    const seen = new Map<string, number>();
    for (const r of got) {
      assert.ok(verifies(sub.secret, r), 'signed');
      for (const h of ['webhook-id', 'webhook-timestamp', 'webhook-signature', 'x-weir-request-id']) assert.ok(r.headers[h], `carries ${h}`);
      const event = bodyOf(r);
      const validate = validators.get(event.type);
      assert.ok(validate, `${event.type} is a documented webhook`);
      const valid: boolean = validate(event);
      assert.ok(valid, `${event.type} ${event.data?.change ?? ''}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(event)}`);
      seen.set(event.type, (seen.get(event.type) ?? 0) + 1);
    }
    assert.deepEqual([...seen.keys()].sort(), [...EVENT_TYPES].sort(), 'every event type was delivered');
    // and the schemas are not vacuous: a payload missing a field of its object fails
    const captured = bodyOf(got.find((r) => bodyOf(r).type === 'request.captured')!);
    delete captured.data.object.body_size;
    assert.equal(validators.get('request.captured')!(captured), false);
  });
});

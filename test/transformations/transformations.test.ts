import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { codeHash } from '../../src/transformations/hash.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';
import { call, seedOrg, useTestApp, type Seeded } from '../helpers/app.ts';
import { insertCaptures, insertEndpoint, type EndpointFixture } from '../helpers/fixtures.ts';
import { startReceiver, type Receiver } from '../helpers/https.ts';
import { attempts, deliveries, startTestWorker, waitUntil } from '../delivery/helpers.ts';

// The three worked examples of docs/transformations.md, verbatim.
export const STRIPE_TO_SLACK = `function handler(request, context) {
  const event = request.body;
  const charge = event.data.object;
  const amount = (charge.amount / 100).toFixed(2) + ' ' + charge.currency.toUpperCase();
  console.log('stripe event', event.type);
  return {
    method: 'POST',
    path: '',
    query: '',
    headers: { 'content-type': 'application/json' },
    body: { text: 'Stripe ' + event.type + ': ' + amount + ' (' + event.id + ')' },
  };
}`;

export const STRIP_HEADER = `function handler(request, context) {
  const headers = { ...request.headers };
  delete headers['x-internal-token'];
  return { ...request, headers };
}`;

export const ROUTE_BY_PATH = `function handler(request, context) {
  if (request.path.startsWith('/github')) return { ...request, path: '/ci' + request.path };
  if (request.path.startsWith('/stripe')) return { ...request, path: '/billing' };
  return null; // anything else is not forwarded
}`;

const STRIPE_EVENT = { id: 'evt_1', type: 'charge.succeeded', data: { object: { amount: 2000, currency: 'usd' } } };

const t = useTestApp();

describe('transformations', () => {
  let worker: DeliveryWorker | undefined;
  const receivers: Receiver[] = [];
  afterEach(async () => {
    await worker?.stop();
    worker = undefined;
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });

  async function receiver(...args: Parameters<typeof startReceiver>) {
    const r = await startReceiver(...args);
    receivers.push(r);
    return r;
  }

  /** An org, an endpoint and a forward destination to `url` with `code` as its transformation. */
  async function setup(url: string, code: string | null): Promise<{ s: Seeded; ep: EndpointFixture; destId: string }> {
    const s = await seedOrg(t.db);
    const ep = await insertEndpoint(t.db, s.org.id);
    const r = await call(t.app, 'POST', '/v1/destinations', {
      key: s.key,
      body: { name: 'dest', url, endpoint_id: ep.id, transformation: code === null ? null : { code } },
    });
    assert.equal(r.status, 201, JSON.stringify(r.json));
    return { s, ep, destId: r.json.data.forward_destination_id };
  }

  async function settled(n: number) {
    return waitUntil(async () => {
      const rows = await deliveries(t.db);
      return rows.length >= n && rows.every((d) => !['pending', 'in_flight'].includes(d.status)) ? rows : undefined;
    }, `${n} deliveries settled`);
  }

  it('refuses code that does not compile with 400 and the line and column, on create, PATCH and transform-test, storing nothing', async () => {
    const s = await seedOrg(t.db);
    const ep = await insertEndpoint(t.db, s.org.id);
    const bad = 'function handler(request) {\n  return request +* 1;\n}';
    const created = await call(t.app, 'POST', '/v1/destinations', { key: s.key, body: { name: 'd', url: 'https://example.com/x', endpoint_id: ep.id, transformation: { code: bad } } });
    assert.equal(created.status, 400);
    assert.equal(created.json.error.code, 'bad_request');
    assert.match(created.json.error.message, /line 2, column \d+/);
    assert.equal((await t.db.query('select * from destinations')).rows.length, 0);

    const ok = await call(t.app, 'POST', '/v1/destinations', { key: s.key, body: { name: 'd', url: 'https://example.com/x', endpoint_id: ep.id, transformation: { code: STRIP_HEADER } } });
    assert.equal(ok.status, 201, JSON.stringify(ok.json));
    const fdId = ok.json.data.forward_destination_id;
    const patched = await call(t.app, 'PATCH', `/v1/endpoints/${ep.id}/destinations/${fdId}`, { key: s.key, body: { transformation: { code: 'let x = ;' } } });
    assert.equal(patched.status, 400);
    assert.match(patched.json.error.message, /line 1, column \d+/);
    const noHandler = await call(t.app, 'PATCH', `/v1/endpoints/${ep.id}/destinations/${fdId}`, { key: s.key, body: { transformation: { code: 'const y = 1;' } } });
    assert.equal(noHandler.status, 400);
    assert.match(noHandler.json.error.message, /does not define function handler/);
    for (const body of [{ transformation: { code: 1 } }, { transformation: { code: 'function handler(r){return r}', extra: 1 } }, { transformation: 'x' }]) {
      const r = await call(t.app, 'PATCH', `/v1/endpoints/${ep.id}/destinations/${fdId}`, { key: s.key, body });
      assert.equal(r.status, 400, JSON.stringify(body));
    }
    const list = await call(t.app, 'GET', `/v1/endpoints/${ep.id}/destinations`, { key: s.key });
    assert.deepEqual(list.json.data.data[0].transformation, { code: STRIP_HEADER, hash: codeHash(STRIP_HEADER) });

    const cleared = await call(t.app, 'PATCH', `/v1/endpoints/${ep.id}/destinations/${fdId}`, { key: s.key, body: { transformation: null } });
    assert.equal(cleared.status, 200);
    assert.equal(cleared.json.data.transformation, null);

    const [cap] = await insertCaptures(t.db, ep, [{ body: '{}' }]);
    const test = await call(t.app, 'POST', `/v1/requests/${cap.id}/transform-test`, { key: s.key, body: { code: bad } });
    assert.equal(test.status, 400);
    assert.match(test.json.error.message, /line 2, column \d+/);
  });

  it('Stripe to a Slack message: sends the handler\'s request, keeps webhook-id, records the code version and what was sent', async () => {
    const rx = await receiver();
    const { s, ep } = await setup(`${rx.url}/slack`, STRIPE_TO_SLACK);
    const [cap] = await insertCaptures(t.db, ep, [
      { path: '/stripe', query: 'x=1', headers: [['content-type', 'application/json'], ['stripe-signature', 't=1,v1=abc']], body: JSON.stringify(STRIPE_EVENT) },
    ]);
    worker = await startTestWorker(t.db);
    const [got] = await rx.waitFor(1);
    assert.equal(got.url, '/slack');
    assert.deepEqual(JSON.parse(got.body.toString()), { text: 'Stripe charge.succeeded: 20.00 USD (evt_1)' });
    assert.equal(got.headers['stripe-signature'], undefined);
    assert.equal(got.headers['webhook-id'], `msg_${cap.id}`);
    assert.equal(got.headers['x-weir-request-id'], cap.id);
    const [d] = await settled(1);
    assert.equal(d.status, 'succeeded');

    const forwards = await call(t.app, 'GET', `/v1/requests/${cap.id}/forwards`, { key: s.key });
    assert.equal(forwards.json.data.data[0].attempts[0].transformation_hash, codeHash(STRIPE_TO_SLACK));
    const sent = await call(t.app, 'GET', `/v1/requests/${cap.id}/forwards/${d.id}/transformed`, { key: s.key });
    assert.equal(sent.status, 200, JSON.stringify(sent.json));
    assert.equal(sent.json.data.method, 'POST');
    assert.equal(sent.json.data.path, '');
    assert.equal(sent.json.data.url, `${rx.url}/slack`);
    assert.equal(sent.json.data.body, got.body.toString());
    assert.ok(sent.json.data.headers.some(([n, v]: [string, string]) => n === 'webhook-id' && v === `msg_${cap.id}`));

    const missing = await call(t.app, 'GET', `/v1/requests/${cap.id}/forwards/00000000-0000-7000-8000-000000000000/transformed`, { key: s.key });
    assert.equal(missing.status, 404);
    const badId = await call(t.app, 'GET', `/v1/requests/${cap.id}/forwards/nope/transformed`, { key: s.key });
    assert.equal(badId.status, 404);
  });

  it("strips a header, and never lets the code change Weir's webhook-id", async () => {
    const rx = await receiver();
    const code = STRIP_HEADER.replace('return { ...request, headers };', "headers['webhook-id'] = 'forged'; headers['weir-verification'] = 'verified'; return { ...request, headers };");
    const { ep } = await setup(rx.url, code);
    const [cap] = await insertCaptures(t.db, ep, [{ headers: [['content-type', 'text/plain'], ['x-internal-token', 'secret'], ['x-keep', 'yes']], body: 'plain text ✓' }]);
    worker = await startTestWorker(t.db);
    const [got] = await rx.waitFor(1);
    assert.equal(got.headers['x-internal-token'], undefined);
    assert.equal(got.headers['x-keep'], 'yes');
    assert.equal(got.headers['webhook-id'], `msg_${cap.id}`);
    assert.equal(got.headers['weir-verification'], undefined);
    assert.equal(got.body.toString(), 'plain text ✓');
  });

  it('routes by path, and null skips the delivery with the reason, no attempt and no incident', async () => {
    const rx = await receiver();
    const { s, ep } = await setup(rx.url, ROUTE_BY_PATH);
    const caps = await insertCaptures(t.db, ep, [{ path: '/github/push', body: '{}' }, { path: '/stripe', body: '{}' }, { path: '/other', body: '{}' }]);
    worker = await startTestWorker(t.db);
    const rows = await settled(3);
    assert.deepEqual(rx.received.map((r) => r.url).sort(), ['/billing', '/ci/github/push']);
    const skipped = rows.find((d) => d.request_id === caps[2].id)!;
    assert.equal(skipped.status, 'skipped');
    assert.match(skipped.last_error!, /skipped/);
    assert.equal((await attempts(t.db, skipped.id)).length, 0);
    assert.equal((await t.db.query('select * from incident_failures')).rows.length, 0);
    const forwards = await call(t.app, 'GET', `/v1/requests/${caps[2].id}/forwards`, { key: s.key });
    assert.equal(forwards.json.data.data[0].status, 'skipped');
    assert.match(forwards.json.data.data[0].last_error, /transformation returned null/);
  });

  it('an infinite loop, a 1 GB allocation, process, require, fetch and the host globalThis each fail only their delivery, final, with an incident', async () => {
    const rx = await receiver();
    const cases: Array<[string, string | RegExp]> = [
      ['function handler(r) { while (true) {} }', 'transformation_timeout'],
      ['function handler(r) { const a = new Uint8Array(1024 * 1024 * 1024); return r; }', 'transformation_memory'],
      ['function handler(r) { const big = []; for (;;) big.push("x".repeat(1 << 20) + big.length); }', 'transformation_memory'],
      ['function handler(r) { return { ...r, body: process.env }; }', /^transformation_error: ReferenceError: .*process/],
      ['function handler(r) { return { ...r, body: require("fs").readFileSync("/etc/passwd", "utf8") }; }', /^transformation_error: ReferenceError: .*require/],
      ['function handler(r) { fetch("http://127.0.0.1:1/"); return r; }', /^transformation_error: ReferenceError: .*fetch/],
      ['function handler(r) { return { ...r, body: globalThis.process.versions }; }', /^transformation_error: TypeError/],
      ['function handler(r) { setTimeout(() => {}, 1); return r; }', /^transformation_error: ReferenceError: .*setTimeout/],
      ['function handler(r) { throw new Error("boom"); }', 'transformation_error: Error: boom'],
      ['function f() { return f(); }\nfunction handler(r) { return f(); }', /^transformation_error: /],
    ];
    const s = await seedOrg(t.db);
    const eps: EndpointFixture[] = [];
    for (const [code] of cases) {
      const ep = await insertEndpoint(t.db, s.org.id);
      const r = await call(t.app, 'POST', '/v1/destinations', { key: s.key, body: { name: 'd', url: rx.url, endpoint_id: ep.id, transformation: { code } } });
      assert.equal(r.status, 201, JSON.stringify(r.json));
      eps.push(ep);
    }
    const healthy = await insertEndpoint(t.db, s.org.id, { forwardUrl: `${rx.url}/healthy` });
    const caps: Array<{ id: string }> = [];
    for (const ep of eps) caps.push((await insertCaptures(t.db, ep, [{ body: '{"a":1}' }]))[0]);
    worker = await startTestWorker(t.db, { concurrency: 2 });
    const rows = await settled(cases.length);
    for (const [i, [code, expected]] of cases.entries()) {
      const d = rows.find((r) => r.request_id === caps[i].id)!;
      assert.equal(d.status, 'failed', code);
      assert.equal(d.attempt_count, 1, code);
      if (typeof expected === 'string') assert.equal(d.last_error, expected, code);
      else assert.match(d.last_error!, expected, code);
      const [a] = await attempts(t.db, d.id);
      assert.equal((a as any).transformation_hash, codeHash(code));
    }
    assert.equal(rx.received.length, 0, 'nothing was sent');
    const failures = await t.db.query<{ n: number }>('select count(*)::int as n from incident_failures');
    assert.equal(failures.rows[0].n, cases.length, 'each failure is recorded for incidents');
    // the server and the worker are fine: a delivery right after succeeds
    await insertCaptures(t.db, healthy, [{ body: '{}' }]);
    const [got] = await rx.waitFor(1);
    assert.equal(got.url, '/healthy');
    const health = await call(t.app, 'GET', '/v1/health', { key: s.key });
    assert.equal(health.status, 200);
  });

  it('100 concurrent transformed forwards to a real loopback server', async () => {
    const rx = await receiver();
    const code = `function handler(request, context) {
      return { ...request, headers: { ...request.headers, 'x-transformed': context.request_id }, body: { n: request.body.n * 2, endpoint: context.endpoint_id } };
    }`;
    const { ep } = await setup(rx.url, code);
    const caps = await insertCaptures(t.db, ep, Array.from({ length: 100 }, (_, n) => ({ body: JSON.stringify({ n }) })));
    worker = await startTestWorker(t.db, { concurrency: 100 });
    const got = await rx.waitFor(100);
    await settled(100);
    const byId = new Map(got.map((r) => [String(r.headers['x-transformed']), JSON.parse(r.body.toString())]));
    for (const [n, c] of caps.entries()) assert.deepEqual(byId.get(c.id), { n: n * 2, endpoint: ep.id });
    assert.equal((await deliveries(t.db, "status = 'succeeded'")).length, 100);
  });

  it("a replay uses the destination's current code", async () => {
    const rx = await receiver();
    const v1 = 'function handler(r) { return { ...r, body: { version: 1 } }; }';
    const v2 = 'function handler(r) { return { ...r, body: { version: 2, was: r.body } }; }';
    const { s, ep, destId } = await setup(rx.url, v1);
    const [cap] = await insertCaptures(t.db, ep, [{ body: '{"a":1}' }]);
    worker = await startTestWorker(t.db);
    await rx.waitFor(1);
    await settled(1);
    const patched = await call(t.app, 'PATCH', `/v1/endpoints/${ep.id}/destinations/${destId}`, { key: s.key, body: { transformation: { code: v2 } } });
    assert.equal(patched.status, 200);
    assert.equal(patched.json.data.transformation.hash, codeHash(v2));
    const replay = await call(t.app, 'POST', `/v1/requests/${cap.id}/replay`, { key: s.key, body: { destination_id: destId } });
    assert.equal(replay.status, 202);
    const [first, second] = await rx.waitFor(2);
    assert.deepEqual(JSON.parse(first.body.toString()), { version: 1 });
    assert.deepEqual(JSON.parse(second.body.toString()), { version: 2, was: { a: 1 } });
    assert.equal(second.headers['webhook-id'], first.headers['webhook-id']);
    const rows = await settled(2);
    const hashes = (await attempts(t.db)).map((a: any) => a.transformation_hash);
    assert.deepEqual(hashes, [codeHash(v1), codeHash(v2)]);
    const sent = await call(t.app, 'GET', `/v1/requests/${cap.id}/forwards/${rows[1].id}/transformed`, { key: s.key });
    assert.equal(sent.json.data.transformation_hash, codeHash(v2));
  });

  it('transform-test answers the request, the logs and the duration, or the error', async () => {
    const s = await seedOrg(t.db, { role: 'viewer', scopes: ['requests:read'] });
    const ep = await insertEndpoint(t.db, s.org.id);
    const [cap] = await insertCaptures(t.db, ep, [{ headers: [['content-type', 'application/json'], ['stripe-signature', 'x']], body: JSON.stringify(STRIPE_EVENT) }]);
    const r = await call(t.app, 'POST', `/v1/requests/${cap.id}/transform-test`, { key: s.key, body: { code: STRIPE_TO_SLACK } });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.deepEqual(r.json.data.request.body, { text: 'Stripe charge.succeeded: 20.00 USD (evt_1)' });
    assert.equal(r.json.data.request.headers['webhook-id'], `msg_${cap.id}`);
    assert.equal(r.json.data.request.headers['content-type'], 'application/json');
    assert.deepEqual(r.json.data.logs, ['stripe event charge.succeeded']);
    assert.equal(typeof r.json.data.duration_ms, 'number');

    const skip = await call(t.app, 'POST', `/v1/requests/${cap.id}/transform-test`, { key: s.key, body: { code: 'function handler() { console.log("no"); return null; }' } });
    assert.deepEqual(skip.json.data, { request: null, logs: ['no'], duration_ms: skip.json.data.duration_ms });
    const ctx = await call(t.app, 'POST', `/v1/requests/${cap.id}/transform-test`, { key: s.key, body: { code: 'function handler(r, c) { return { ...r, body: c }; }' } });
    assert.equal(ctx.json.data.request.body.request_id, cap.id);
    assert.equal(ctx.json.data.request.body.endpoint_id, ep.id);
    assert.equal(ctx.json.data.request.body.received_at, cap.receivedAt.toISOString());

    const loop = await call(t.app, 'POST', `/v1/requests/${cap.id}/transform-test`, { key: s.key, body: { code: 'function handler() { for (;;) {} }' } });
    assert.equal(loop.status, 400);
    assert.equal(loop.json.error.message, 'transformation_timeout');
    const thrown = await call(t.app, 'POST', `/v1/requests/${cap.id}/transform-test`, { key: s.key, body: { code: 'function handler() { throw new TypeError("nope"); }' } });
    assert.equal(thrown.status, 400);
    assert.equal(thrown.json.error.message, 'transformation_error: TypeError: nope');
    const badHeader = await call(t.app, 'POST', `/v1/requests/${cap.id}/transform-test`, { key: s.key, body: { code: 'function handler(r) { return { ...r, headers: { "bad name": "x" } }; }' } });
    assert.equal(badHeader.status, 400);
    assert.match(badHeader.json.error.message, /^transformation_error: header name/);
    for (const body of [{}, { code: 5 }, { code: 'x', extra: 1 }]) {
      const bad = await call(t.app, 'POST', `/v1/requests/${cap.id}/transform-test`, { key: s.key, body });
      assert.equal(bad.status, 400, JSON.stringify(body));
    }
    const unknown = await call(t.app, 'POST', '/v1/requests/00000000-0000-7000-8000-000000000000/transform-test', { key: s.key, body: { code: STRIP_HEADER } });
    assert.equal(unknown.status, 404);

    const binary = (await insertCaptures(t.db, ep, [{ headers: [['content-type', 'application/octet-stream']], body: Buffer.from([0xff, 0x00, 0xfe]) }]))[0];
    const b = await call(t.app, 'POST', `/v1/requests/${binary.id}/transform-test`, { key: s.key, body: { code: 'function handler(r, c) { console.log(r.body === null, c.body_base64); return r; }' } });
    assert.deepEqual(b.json.data.logs, ['true /wD+']);
    assert.equal(b.json.data.request.body_base64, '/wD+');
  });
});

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Stripe from 'stripe';
import { waitUntil } from '../delivery/helpers.ts';
import { freshStore, http, startWeirProcess, type Store, type WeirProcess } from '../helpers/weir-process.ts';
import { agentDestination, capture, roomyPlans, useAgentsAndServers, type AgentProcess, type LocalServer } from './helpers.ts';

const stripe = new Stripe('sk_test_not_used_for_network');

/**
 * The real `weir agent` CLI against a real `weir serve` and a real HTTP
 * server on loopback: delivery, durability across agent restarts, retry by
 * environment, revocation and shutdown.
 */
describe('weir agent against a running Weir', () => {
  let store: Store;
  let weir: WeirProcess;
  let key: string;
  const run = useAgentsAndServers();

  before(async () => {
    store = await freshStore();
    weir = await startWeirProcess({ ...store.env, WEIR_PLANS: roomyPlans() });
    key = weir.bootstrapKey!;
  });
  after(async () => {
    await weir?.stop('SIGKILL');
    await store?.drop();
  });

  const local = run.local;
  const agent = (token: string) => run.agent(weir.base, token);
  const connected = (a: AgentProcess, n = 1) => a.waitForEvent(() => a.events.filter((e) => e.event === 'connected' || e.event === 'reconnected').length >= n, 'the agent to connect');
  const forwards = async (requestId: string) => (await http(weir.base, 'GET', `/v1/requests/${requestId}/forwards`, { token: key })).json.data.data;
  const settled = (requestId: string, status = 'succeeded') =>
    waitUntil(async () => {
      const f = (await forwards(requestId))[0];
      return f?.status === status ? f : undefined;
    }, `delivery of ${requestId} to be ${status}`);
  const webhookIds = (s: LocalServer) => s.received.map((r) => String(r.headers['webhook-id']));

  it('delivers byte-exact: binary body, duplicate headers in order, a Stripe signature that verifies, recorded like an https attempt', async () => {
    const rx = await local({ reply: () => ({ status: 201, headers: { 'x-answer': 'yes' }, body: 'created' }) });
    const setup = await agentDestination(weir, key, { port: rx.port, path: '/stripe/hooks?src=weir' });
    const a = agent(setup.token);
    const hello = await connected(a);
    assert.equal(hello.agent_name, 'laptop');
    assert.equal(hello.environment, 'production');
    assert.deepEqual(hello.targets.map((t: any) => [t.port, t.path]), [[rx.port, '/stripe/hooks?src=weir']]);

    const secret = 'whsec_agent';
    const payload = '{"id":"evt_agent","object":"event","type":"invoice.paid"}';
    const binary = Buffer.from([0, 255, 1, 254, 0x80, 0x0d, 0x0a, 0xc3, 0x28]);
    const signed = await capture(weir.ingestPort, setup.slug, {
      path: '/orders',
      headers: ['Content-Type', 'application/json', 'Stripe-Signature', stripe.webhooks.generateTestHeaderString({ payload, secret }), 'X-Dup', 'one', 'x-dup', 'two'],
      body: payload,
    });
    const raw = await capture(weir.ingestPort, setup.slug, { headers: ['content-type', 'application/octet-stream'], body: binary, method: 'PUT' });
    const [first, second] = await rx.waitFor(2);

    assert.equal(first.method, 'POST');
    assert.equal(first.url, '/stripe/hooks/orders?src=weir');
    assert.equal(stripe.webhooks.constructEvent(first.body, String(first.headers['stripe-signature']), secret).id, 'evt_agent');
    const names = first.rawHeaders.filter((_, i) => i % 2 === 0);
    const dups = first.rawHeaders.flatMap((v, i) => (i % 2 === 0 && v.toLowerCase() === 'x-dup' ? [[v, first.rawHeaders[i + 1]]] : []));
    assert.deepEqual(dups, [['X-Dup', 'one'], ['x-dup', 'two']], 'duplicates kept with their case, in order');
    assert.ok(names.indexOf('Content-Type') < names.indexOf('Stripe-Signature'));
    assert.equal(first.headers['webhook-id'], `msg_${signed}`);
    assert.equal(second.method, 'PUT');
    assert.ok(second.body.equals(binary), 'binary body byte for byte');

    const f = await settled(raw);
    assert.equal(f.destination_type, 'agent');
    assert.equal(f.attempts.length, 1);
    const attempt = f.attempts[0];
    assert.equal(attempt.status_code, 201);
    assert.equal(attempt.url, `http://127.0.0.1:${rx.port}/stripe/hooks?src=weir`);
    assert.equal(attempt.response_body, 'created');
    assert.ok(attempt.response_headers.some(([n, v]: [string, string]) => n === 'x-answer' && v === 'yes'));
    assert.equal(typeof attempt.duration_ms, 'number');
    const line = await a.waitForEvent((e) => e.event === 'forward' && e.request_id === raw, 'the forward line');
    assert.equal(line.status, 201);
    assert.equal(line.method, 'PUT');

    const shown = (await http(weir.base, 'GET', `/v1/agents/${setup.agentId}`, { token: key })).json.data;
    assert.equal(shown.status, 'connected');
    assert.equal(shown.node, hello.node);
    assert.equal(shown.agent_version, '0.1.0');
    assert.ok(shown.hostname);
  });

  it('production: what is captured while the agent is down waits and arrives in capture order; only the forward in flight arrives twice', async () => {
    let hung = false;
    const rx = await local({
      reply: (r) => {
        if (r.body.toString() === '{"n":1}' && !hung) {
          hung = true;
          return 'hang';
        }
        return {};
      },
    });
    const setup = await agentDestination(weir, key, { port: rx.port });
    let a = agent(setup.token);
    await connected(a);
    const ids = [await capture(weir.ingestPort, setup.slug, { body: '{"n":0}' })];
    await rx.waitFor(1);
    ids.push(await capture(weir.ingestPort, setup.slug, { body: '{"n":1}' }));
    await rx.waitFor(2); // n=1 is now in flight, its answer never comes
    a.child.kill('SIGKILL');
    await a.exited;
    for (let n = 2; n < 7; n++) ids.push(await capture(weir.ingestPort, setup.slug, { body: `{"n":${n}}` }));
    // nothing is lost or failed while the agent is away: they wait
    await waitUntil(async () => (await forwards(ids[1]))[0].status === 'pending', 'the in-flight delivery to go back to the queue');
    for (const id of ids.slice(2)) assert.equal((await forwards(id))[0].status, 'pending');
    assert.equal(await http(weir.base, 'GET', `/v1/agents/${setup.agentId}`, { token: key }).then((r) => r.json.data.status), 'disconnected');

    a = agent(setup.token);
    await connected(a);
    for (const id of ids) await settled(id);
    assert.deepEqual(webhookIds(rx), [ids[0], ids[1], ...ids.slice(1)].map((id) => `msg_${id}`), 'in capture order, the one in flight again first');
    for (const id of ids) assert.equal((await forwards(id))[0].attempts.length, 1, 'one recorded attempt each: the interrupted one left none');
  });

  it('production: retries a retryable failure on its own', async () => {
    const rx = await local({ reply: (_r, i) => (i === 0 ? { status: 503 } : {}) });
    const setup = await agentDestination(weir, key, { port: rx.port });
    agent(setup.token);
    const id = await capture(weir.ingestPort, setup.slug);
    const f = await waitUntil(async () => {
      const x = (await forwards(id))[0];
      return x.status === 'succeeded' ? x : undefined;
    }, 'the retry to succeed', 30_000);
    assert.deepEqual(f.attempts.map((t: any) => t.status_code), [503, 200]);
  });

  it('rate limits apply to agent destinations with the same smooth queue as https', async () => {
    const rx = await local();
    const setup = await agentDestination(weir, key, { port: rx.port, rateLimitPerMinute: 240 }); // one per 250 ms
    agent(setup.token);
    const ids: string[] = [];
    for (let n = 0; n < 5; n++) ids.push(await capture(weir.ingestPort, setup.slug, { body: `{"n":${n}}` }));
    const attempts = [];
    for (const id of ids) attempts.push((await settled(id)).attempts[0]);
    // The schedule Weir computed and recorded, not when the requests happened
    // to arrive on a busy machine: each attempt was given a slot, the slots are
    // the destination's interval apart (the database's arithmetic, exact), and
    // no attempt started before its slot (the agent reports its start; a few
    // ms for the clocks' conversion).
    const slots = attempts.map((a) => Date.parse(a.scheduled_at));
    assert.ok(slots.every(Number.isFinite), `every attempt records its slot: ${attempts.map((a) => a.scheduled_at)}`);
    for (let i = 1; i < slots.length; i++) assert.ok(slots[i] - slots[i - 1] >= 250, `slots ${i - 1} and ${i} are ${slots[i] - slots[i - 1]} ms apart, the interval is 250 ms`);
    attempts.forEach((a, i) => assert.ok(Date.parse(a.started_at) >= slots[i] - 50, `attempt ${i} started ${slots[i] - Date.parse(a.started_at)} ms before its slot`));
    assert.deepEqual(webhookIds(rx), ids.map((id) => `msg_${id}`), 'and still in capture order');
  });

  it('development: a failure is final; environment_override downgrades a production agent the same way', async () => {
    const rx = await local({ reply: () => ({ status: 500 }) });
    const dev = await agentDestination(weir, key, { port: rx.port, environment: 'development' });
    const downgraded = await agentDestination(weir, key, { port: rx.port, environment: 'production', environmentOverride: 'development' });
    agent(dev.token);
    agent(downgraded.token);
    for (const setup of [dev, downgraded]) {
      const id = await capture(weir.ingestPort, setup.slug);
      const f = await settled(id, 'failed');
      assert.equal(f.attempts.length, 1);
      assert.equal(f.attempts[0].status_code, 500);
      assert.match(f.last_error, /development agents never retry/);
    }
  });

  it('development: captures made while it was offline are delivered once when it connects', async () => {
    const rx = await local();
    const setup = await agentDestination(weir, key, { port: rx.port, environment: 'development' });
    const ids: string[] = [];
    for (let n = 0; n < 3; n++) ids.push(await capture(weir.ingestPort, setup.slug, { body: `{"n":${n}}` }));
    agent(setup.token);
    for (const id of ids) await settled(id);
    assert.deepEqual(webhookIds(rx), ids.map((id) => `msg_${id}`));
  });

  it('revoking the agent closes its link and the agent stops with exit code 1; a wrong token stops it at once', async () => {
    const rx = await local();
    const setup = await agentDestination(weir, key, { port: rx.port });
    const a = agent(setup.token);
    await connected(a);
    assert.equal((await http(weir.base, 'DELETE', `/v1/agents/${setup.agentId}`, { token: key })).status, 204);
    assert.equal(await a.exited, 1);
    assert.match(a.events.find((e) => e.event === 'fatal')?.reason ?? '', /token/);
    const shown = (await http(weir.base, 'GET', `/v1/agents/${setup.agentId}?include_revoked=true`, { token: key })).json.data;
    assert.equal(shown.status, 'disconnected');

    const wrong = agent('wr_agent_' + 'A'.repeat(43));
    assert.equal(await wrong.exited, 1);
    assert.match(wrong.events.find((e) => e.event === 'fatal')?.reason ?? '', /token refused/);
    const reused = agent(setup.token);
    assert.equal(await reused.exited, 1, 'the revoked token is refused at the handshake');
  });

  it('re-issuing the token closes the old link; the new token connects', async () => {
    const rx = await local();
    const setup = await agentDestination(weir, key, { port: rx.port });
    const a = agent(setup.token);
    await connected(a);
    const r = await http(weir.base, 'POST', `/v1/agents/${setup.agentId}/token`, { token: key });
    assert.equal(r.status, 200);
    assert.equal(await a.exited, 1);
    const b = agent(r.json.data.token);
    await connected(b);
    const id = await capture(weir.ingestPort, setup.slug);
    await settled(id);
  });

  it('stops cleanly on SIGINT with a summary', async () => {
    const rx = await local();
    const setup = await agentDestination(weir, key, { port: rx.port });
    const a = agent(setup.token);
    await connected(a);
    await settled(await capture(weir.ingestPort, setup.slug));
    await a.waitForEvent((e) => e.event === 'forward', 'the forward line');
    a.child.kill('SIGINT');
    assert.equal(await a.exited, 0);
    const summary = a.events.find((e) => e.event === 'summary');
    assert.equal(summary?.forwards, 1);
    assert.equal(summary?.succeeded, 1);
    await waitUntil(async () => (await http(weir.base, 'GET', `/v1/agents/${setup.agentId}`, { token: key })).json.data.status === 'disconnected', 'the agent to show disconnected');
  });
});

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { onPostgres } from '../helpers/db.ts';
import { startReceiver, testCa, type Receiver } from '../helpers/https.ts';
import { freshStore, http, startWeirProcess, type Store, type WeirProcess } from '../helpers/weir-process.ts';

/**
 * Two `weir serve` processes on one PostgreSQL, each capturing half of the
 * requests: both answer the same usage, and a request.captured subscription
 * gets every capture once, whichever node captured it and whichever node's
 * producer and worker took it.
 */
describe('subscriptions and usage on two nodes', { skip: onPostgres ? false : 'needs PostgreSQL: several processes share one database' }, () => {
  let store: Store;
  const nodes: WeirProcess[] = [];
  let receiver: Receiver;

  before(async () => {
    store = await freshStore();
    receiver = await startReceiver();
    const env = { ...store.env, WEIR_ALLOW_PRIVATE_DESTINATIONS: '1', NODE_EXTRA_CA_CERTS: testCa().caFile, WEIR_LOG_LEVEL: 'warn' };
    nodes.push(await startWeirProcess(env));
    nodes.push(await startWeirProcess(env));
  });
  after(async () => {
    await Promise.all(nodes.map((n) => n.stop()));
    await receiver?.close();
    await store?.drop();
  });

  it('counts every capture once in usage from either node, and announces each once', async () => {
    const key = nodes[0].bootstrapKey!;
    assert.ok(key, 'the first node printed the first key');
    const endpoint = await http(nodes[0].base, 'POST', '/v1/endpoints', { token: key, body: { name: 'two nodes' } });
    assert.equal(endpoint.status, 201, JSON.stringify(endpoint.json));
    const sub = await http(nodes[1].base, 'POST', '/v1/subscriptions', { token: key, body: { target_url: receiver.url, event_types: ['request.captured'] } });
    assert.equal(sub.status, 201, JSON.stringify(sub.json));
    const slug = endpoint.json.data.slug as string;
    const bodies: string[] = [];
    for (let i = 0; i < 20; i++) {
      const body = `{"n":${i},"pad":"${'x'.repeat(i)}"}`;
      bodies.push(body);
      const node = nodes[i % 2];
      const res = await fetch(`http://127.0.0.1:${node.ingestPort}/h/${slug}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      assert.ok(res.ok, `capture ${i}: ${res.status}`);
      await res.arrayBuffer();
    }
    const bytes = bodies.reduce((n, b) => n + Buffer.byteLength(b), 0);
    for (const node of nodes) {
      const u = await http(node.base, 'GET', '/v1/usage', { token: key });
      assert.equal(u.status, 200);
      assert.equal(u.json.data.current_period.captures, 20);
      assert.equal(u.json.data.current_period.bytes_captured, bytes);
      assert.equal(u.json.data.limits.endpoints.used, 1);
    }
    const got = await receiver.waitFor(20, 60_000);
    const wh = new Webhook(sub.json.data.secret);
    const announced = got.map((r) => wh.verify(r.body, r.headers as Record<string, string>) as { id: string; data: { object: { body: string } } });
    assert.deepEqual(announced.map((e) => e.data.object.body).sort(), [...bodies].sort());
    assert.equal(new Set(announced.map((e) => e.id)).size, 20, 'each capture announced under one event id');
  });
});

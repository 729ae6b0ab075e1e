import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { startReceiver, testCa, type Receiver } from '../helpers/https.ts';
import { freshStore, http, startWeirProcess, type Store, type WeirProcess } from '../helpers/weir-process.ts';

/**
 * A real `weir serve` killed with SIGKILL while it is sending an event: the
 * event's row was committed and leased, its outcome never recorded. The
 * next process on the same database sends it (PGlite: at start, the dead
 * process's leases released; PostgreSQL: when the lease runs out).
 */
describe('an event survives a crash of the node sending it', () => {
  let store: Store | undefined;
  const procs: WeirProcess[] = [];
  let receiver: Receiver | undefined;
  after(async () => {
    await Promise.all(procs.map((p) => p.stop('SIGKILL')));
    await receiver?.close();
    await store?.drop();
  });

  it('is delivered after a restart with the same webhook-id, still signed', async () => {
    store = await freshStore();
    // the first send never gets an answer: the node dies while waiting for it
    receiver = await startReceiver({ reply: (_r, i) => (i === 0 ? 'hang' : { status: 200 }) });
    const env = {
      ...store.env,
      WEIR_ALLOW_PRIVATE_DESTINATIONS: '1',
      NODE_EXTRA_CA_CERTS: testCa().caFile,
      WEIR_LOG_LEVEL: 'warn',
      WEIR_FORWARD_TIMEOUT_MS: '3000',
      WEIR_DELIVERY_LEASE_MS: '5000',
      WEIR_DELIVERY_POLL_MS: '1000',
    };
    const first = await startWeirProcess(env);
    procs.push(first);
    const key = first.bootstrapKey!;
    const endpoint = await http(first.base, 'POST', '/v1/endpoints', { token: key, body: { name: 'crash' } });
    const sub = await http(first.base, 'POST', '/v1/subscriptions', { token: key, body: { target_url: receiver.url, event_types: ['request.captured'] } });
    assert.equal(sub.status, 201);
    const res = await fetch(`http://127.0.0.1:${first.ingestPort}/h/${endpoint.json.data.slug}`, { method: 'POST', body: '{"kept":true}' });
    assert.equal(res.status, 200);
    const [hung] = await receiver.waitFor(1, 30_000);
    await first.stop('SIGKILL');

    procs.push(await startWeirProcess(env));
    const [, resent] = await receiver.waitFor(2, 60_000);
    assert.equal(resent.headers['webhook-id'], hung.headers['webhook-id']);
    const event = new Webhook(sub.json.data.secret).verify(resent.body, resent.headers as Record<string, string>) as { data: { object: { body: string } } };
    assert.equal(event.data.object.body, '{"kept":true}');
  });
});

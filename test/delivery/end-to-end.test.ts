import { sign as githubSign, verify as githubVerify } from '@octokit/webhooks-methods';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Stripe from 'stripe';
import { startReceiver, testCa, type Receiver } from '../helpers/https.ts';
import { freshStore, http, startWeirProcess, type Store, type WeirProcess } from '../helpers/weir-process.ts';
import { waitUntil } from './helpers.ts';

const stripe = new Stripe('sk_test_not_used_for_network');

/**
 * The whole path through a real `weir serve`: a webhook posted to the
 * ingest URL is captured, forwarded over HTTPS (the test CA trusted through
 * NODE_EXTRA_CA_CERTS) with its signatures intact, listed with its
 * attempts, and replayed with the same webhook-id.
 */
describe('capture to destination through a running Weir', () => {
  let store: Store;
  let weir: WeirProcess;
  let stripeRx: Receiver;
  let githubRx: Receiver;

  before(async () => {
    store = await freshStore();
    [stripeRx, githubRx] = [await startReceiver(), await startReceiver()];
    weir = await startWeirProcess({ ...store.env, WEIR_ALLOW_PRIVATE_DESTINATIONS: '1', NODE_EXTRA_CA_CERTS: testCa().caFile });
  });
  after(async () => {
    await weir?.stop('SIGKILL');
    await Promise.all([stripeRx?.close(), githubRx?.close()]);
    await store?.drop();
  });

  it('forwards an ingested webhook with valid Stripe and GitHub signatures, lists it and replays it', async () => {
    const key = weir.bootstrapKey!;
    const ep = await http(weir.base, 'POST', '/v1/endpoints', { token: key, body: { name: 'payments', forward_url: `${stripeRx.url}/stripe` } });
    assert.equal(ep.status, 201, JSON.stringify(ep.json));
    const dest = await http(weir.base, 'POST', '/v1/destinations', { token: key, body: { name: 'github', url: `${githubRx.url}/github`, endpoint_id: ep.json.data.id } });
    assert.equal(dest.status, 201, JSON.stringify(dest.json));

    const secret = 'whsec_end_to_end';
    const payload = '{"id":"evt_e2e","object":"event","type":"invoice.paid","data":{"object":{"amount":4200}}}';
    const res = await fetch(`http://127.0.0.1:${weir.ingestPort}/h/${ep.json.data.slug}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload, secret }),
        'x-hub-signature-256': await githubSign(secret, payload),
      },
      body: payload,
    });
    assert.equal(res.status, 200);
    const { request_id: requestId } = (await res.json()) as { request_id: string };

    const [toStripe] = await stripeRx.waitFor(1);
    const [toGithub] = await githubRx.waitFor(1);
    assert.equal(stripe.webhooks.constructEvent(toStripe.body, String(toStripe.headers['stripe-signature']), secret).id, 'evt_e2e');
    assert.equal(await githubVerify(secret, toGithub.body.toString('utf8'), String(toGithub.headers['x-hub-signature-256'])), true);
    assert.equal(toStripe.headers['webhook-id'], `msg_${requestId}`);
    assert.equal(toGithub.headers['webhook-id'], `msg_${requestId}`);

    const forwards = await waitUntil(async () => {
      const r = await http(weir.base, 'GET', `/v1/requests/${requestId}/forwards`, { token: key });
      return r.json?.data?.data?.every((f: any) => f.status === 'succeeded') && r.json.data.data.length === 2 ? r.json.data.data : undefined;
    }, 'both forwards recorded as succeeded');
    assert.deepEqual(forwards.map((f: any) => f.attempts[0].status_code), [200, 200]);

    const replay = await http(weir.base, 'POST', `/v1/requests/${requestId}/replay`, { token: key, body: { destination_id: dest.json.data.forward_destination_id } });
    assert.equal(replay.status, 202, JSON.stringify(replay.json));
    const [, again] = await githubRx.waitFor(2);
    assert.equal(again.headers['webhook-id'], `msg_${requestId}`);
    assert.ok(again.body.equals(toGithub.body));
    assert.equal(stripeRx.received.length, 1);

    assert.equal(await weir.stop('SIGTERM'), 0, 'a graceful stop with the worker running exits 0');
  });
});

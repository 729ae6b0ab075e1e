import { sign as githubSign, verify as githubVerify } from '@octokit/webhooks-methods';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Stripe from 'stripe';
import { insertCaptures, insertForwardDestination } from '../helpers/fixtures.ts';
import { deliveries, orgWithEndpoint, startTestWorker, useWorkerTest, waitForStatus } from './helpers.ts';

const stripe = new Stripe('sk_test_not_used_for_network');

/** [name, value] pairs of what the receiver saw, minus the ones Weir sets for the new connection. */
function forwardedPairs(raw: string[]): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (let i = 0; i < raw.length; i += 2) out.push([raw[i], raw[i + 1]]);
  return out;
}

describe('forwarding', () => {
  const t = useWorkerTest();

  it('forwards the body byte-exact so Stripe and GitHub signatures verify at the destination', async () => {
    const rx = await t.receiver();
    const ep = await orgWithEndpoint(t.db, `${rx.url}/stripe`);
    const secret = 'whsec_test_secret';
    // whitespace, escapes, non-ASCII and a trailing newline: any re-serialisation would break the signatures
    const payload = '{\n  "id": "evt_1",  "object": "event",\t"type": "charge.succeeded",\r\n  "data": {"name": "Zoë ✓ \\u00e9"}, "n": 1.0}\n';
    const stripeSig = stripe.webhooks.generateTestHeaderString({ payload, secret });
    const githubSig = await githubSign(secret, payload);
    const headers: Array<[string, string]> = [
      ['Content-Type', 'application/json; charset=utf-8'],
      ['Stripe-Signature', stripeSig],
      ['X-Hub-Signature-256', githubSig],
      ['X-GitHub-Event', 'push'],
      ['x-dup', 'one'],
      ['X-Dup', 'two'],
      ['User-Agent', 'Stripe/1.0 (+https://stripe.com/docs/webhooks)'],
    ];
    const [capture] = await insertCaptures(t.db, ep, [{ headers, body: payload }]);
    t.worker = await startTestWorker(t.db);
    const [got] = await rx.waitFor(1);
    await waitForStatus(t.db, ['succeeded'], 1);

    assert.ok(got.body.equals(Buffer.from(payload)), 'body bytes are identical');
    const event = stripe.webhooks.constructEvent(got.body, String(got.headers['stripe-signature']), secret);
    assert.equal(event.id, 'evt_1');
    assert.equal(await githubVerify(secret, got.body.toString('utf8'), String(got.headers['x-hub-signature-256'])), true);
    assert.equal(got.method, 'POST');
    assert.equal(got.url, '/stripe');
    // the captured headers arrive in order, with their case and duplicates, followed by Weir's own
    const pairs = forwardedPairs(got.rawHeaders).filter(([n]) => !['host', 'content-length', 'connection'].includes(n.toLowerCase()));
    assert.deepEqual(pairs, [...headers, ['webhook-id', `msg_${capture.id}`], ['x-weir-request-id', capture.id]]);
    assert.equal(got.headers['content-length'], String(Buffer.byteLength(payload)));
  });

  it('forwards binary bodies and the sub-path and query of the capture', async () => {
    const rx = await t.receiver();
    const ep = await orgWithEndpoint(t.db, `${rx.url}/in?src=weir`);
    const body = Buffer.from([0x00, 0xff, 0xfe, 0x80, 0x0a, 0x0d, 0xc3, 0x28]);
    await insertCaptures(t.db, ep, [{ method: 'PATCH', path: '/shopify/orders', query: 'a=1&b=%20x', headers: [['content-type', 'application/octet-stream']], body }]);
    t.worker = await startTestWorker(t.db);
    const [got] = await rx.waitFor(1);
    assert.ok(got.body.equals(body));
    assert.equal(got.method, 'PATCH');
    assert.equal(got.url, '/in/shopify/orders?src=weir&a=1&b=%20x');
  });

  it('drops hop-by-hop headers and the ones the connection recomputes', async () => {
    const rx = await t.receiver();
    const ep = await orgWithEndpoint(t.db, rx.url);
    await insertCaptures(t.db, ep, [
      {
        headers: [
          ['Host', 'weir.example'],
          ['Connection', 'keep-alive, X-Secret-Hop'],
          ['Keep-Alive', 'timeout=5'],
          ['X-Secret-Hop', 'drop me'],
          ['Transfer-Encoding', 'chunked'],
          ['Proxy-Authorization', 'Basic Zm9vOmJhcg=='],
          ['TE', 'trailers'],
          ['Upgrade', 'h2c'],
          ['Content-Length', '999'],
          ['Expect', '100-continue'],
          ['X-Kept', 'yes'],
        ],
        body: 'hello',
      },
    ]);
    t.worker = await startTestWorker(t.db);
    const [got] = await rx.waitFor(1);
    const names = forwardedPairs(got.rawHeaders).map(([n]) => n.toLowerCase());
    for (const gone of ['keep-alive', 'x-secret-hop', 'transfer-encoding', 'proxy-authorization', 'te', 'upgrade', 'expect']) {
      assert.ok(!names.includes(gone), `${gone} is not forwarded`);
    }
    assert.equal(got.headers['x-kept'], 'yes');
    assert.notEqual(got.headers.host, 'weir.example');
    assert.equal(got.headers['content-length'], '5');
    assert.equal(got.body.toString(), 'hello');
  });

  it('fans out to the forward_url and every enabled destination, skips disabled ones, and applies method_override', async () => {
    const [a, b, off, url] = await Promise.all([t.receiver(), t.receiver(), t.receiver(), t.receiver()]);
    const ep = await orgWithEndpoint(t.db, `${url.url}/main`);
    await insertForwardDestination(t.db, ep, { url: `${a.url}/a`, sortOrder: 1 });
    await insertForwardDestination(t.db, ep, { url: `${b.url}/b`, sortOrder: 2, methodOverride: 'PUT' });
    await insertForwardDestination(t.db, ep, { url: `${off.url}/off`, enabled: false });
    const captures = await insertCaptures(t.db, ep, [{ body: '{"n":1}' }, { body: '{"n":2}' }]);
    assert.equal((await deliveries(t.db)).length, 6, 'one delivery per capture per enabled target, none for the disabled one');
    t.worker = await startTestWorker(t.db);
    await Promise.all([a.waitFor(2), b.waitFor(2), url.waitFor(2)]);
    await waitForStatus(t.db, ['succeeded'], 6);
    assert.equal(off.received.length, 0);
    assert.deepEqual(a.received.map((r) => r.method), ['POST', 'POST']);
    assert.deepEqual(b.received.map((r) => r.method), ['PUT', 'PUT']);
    for (const rx of [a, b, url]) {
      assert.deepEqual(rx.received.map((r) => r.headers['webhook-id']).sort(), captures.map((c) => `msg_${c.id}`).sort());
    }
  });

  it('skips a destination disabled after its deliveries were queued', async () => {
    const rx = await t.receiver();
    const ep = await orgWithEndpoint(t.db);
    const dest = await insertForwardDestination(t.db, ep, { url: rx.url });
    await insertCaptures(t.db, ep, [{ body: 'x' }]);
    await t.db.query(`update forward_destinations set enabled = false where id = $1`, [dest.id]);
    t.worker = await startTestWorker(t.db);
    await waitForStatus(t.db, ['failed'], 1);
    const [d] = await deliveries(t.db);
    assert.match(d.last_error ?? '', /disabled/);
    assert.equal(d.attempt_count, 0);
    assert.equal(rx.received.length, 0);
  });

  it("keeps the sender's own webhook-id, which Standard Webhooks signatures cover", async () => {
    const rx = await t.receiver();
    const ep = await orgWithEndpoint(t.db, rx.url);
    await insertCaptures(t.db, ep, [{ headers: [['webhook-id', 'msg_from_sender'], ['webhook-signature', 'v1,abc']], body: '{}' }]);
    t.worker = await startTestWorker(t.db);
    const [got] = await rx.waitFor(1);
    assert.equal(got.headers['webhook-id'], 'msg_from_sender');
    assert.equal(got.rawHeaders.filter((h) => h.toLowerCase() === 'webhook-id').length, 1);
  });
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { normalizeIp, sourceAddress, trustedProxies } from '../../src/ingest/source-ip.ts';
import { freshStore, http, startWeirProcess } from '../helpers/weir-process.ts';

const proxies = trustedProxies(['127.0.0.1', '10.0.0.0/8', 'fd00::/8']);

test('without trusted proxies the peer is the source, whatever X-Forwarded-For says', () => {
  assert.equal(sourceAddress('198.51.100.1', ['203.0.113.9'], undefined), '198.51.100.1');
  assert.equal(sourceAddress('::ffff:198.51.100.1', [], undefined), '198.51.100.1');
  assert.equal(sourceAddress(undefined, [], undefined), null);
});

test('a peer that is not a trusted proxy is the source', () => {
  assert.equal(sourceAddress('198.51.100.1', ['203.0.113.9'], proxies), '198.51.100.1');
});

test('behind trusted proxies the rightmost untrusted hop is the source; what the client wrote left of it is ignored', () => {
  assert.equal(sourceAddress('127.0.0.1', ['203.0.113.9'], proxies), '203.0.113.9');
  assert.equal(sourceAddress('127.0.0.1', ['6.6.6.6, 203.0.113.9, 10.1.2.3'], proxies), '203.0.113.9');
  assert.equal(sourceAddress('::ffff:127.0.0.1', ['6.6.6.6', '203.0.113.9,10.0.0.2'], proxies), '203.0.113.9', 'several headers are one list');
  assert.equal(sourceAddress('10.9.9.9', ['2001:db8::1, fd00::5'], proxies), '2001:db8::1');
});

test('hops with ports or brackets are understood; a malformed hop stops the walk at the last good address', () => {
  assert.equal(sourceAddress('127.0.0.1', ['203.0.113.9:4711'], proxies), '203.0.113.9');
  assert.equal(sourceAddress('127.0.0.1', ['[2001:db8::7]:443'], proxies), '2001:db8::7');
  assert.equal(sourceAddress('127.0.0.1', ['203.0.113.9, unknown, 10.0.0.1'], proxies), '10.0.0.1');
  assert.equal(sourceAddress('127.0.0.1', ['garbage'], proxies), '127.0.0.1');
});

test('a chain made only of trusted proxies gives its leftmost hop', () => {
  assert.equal(sourceAddress('127.0.0.1', ['10.0.0.1, 10.0.0.2'], proxies), '10.0.0.1');
});

test('normalizeIp leaves other addresses alone', () => {
  assert.equal(normalizeIp('::1'), '::1');
  assert.equal(normalizeIp('::ffff:10.0.0.1'), '10.0.0.1');
});

test('weir serve reads WEIR_TRUSTED_PROXIES into its ingest listener: a capture through a trusted proxy keeps the client address', { timeout: 120_000 }, async (t) => {
  const store = await freshStore();
  t.after(() => store.drop());
  // the test's own connections come from 127.0.0.1: this node treats that peer as its load balancer
  const weir = await startWeirProcess({ ...store.env, WEIR_TRUSTED_PROXIES: '127.0.0.1, 10.0.0.0/8' });
  t.after(() => weir.stop());
  const key = weir.bootstrapKey;
  const endpoint = await http(weir.base, 'POST', '/v1/endpoints', { token: key, body: { name: 'behind a proxy' } });
  assert.equal(endpoint.status, 201);
  const sent = await fetch(`http://127.0.0.1:${weir.ingestPort}/h/${endpoint.json.data.slug}`, {
    method: 'POST',
    // what the client wrote, then the client as the outer proxy saw it, then an inner trusted proxy
    headers: { 'x-forwarded-for': '192.0.2.66, 203.0.113.7, 10.1.2.3' },
    body: '{}',
  });
  assert.equal(sent.status, 200);
  const { request_id } = (await sent.json()) as { request_id: string };
  const stored = await http(weir.base, 'GET', `/v1/requests/${request_id}`, { token: key });
  assert.equal(stored.status, 200);
  assert.equal(stored.json.data.source_ip, '203.0.113.7');
});

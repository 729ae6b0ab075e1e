import assert from 'node:assert/strict';
import { test } from 'node:test';
import { normalizeIp, sourceAddress, trustedProxies } from '../../src/ingest/source-ip.ts';

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

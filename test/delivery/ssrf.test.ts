import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { classifyAddress, resolveChecked, type Resolver } from '../../src/delivery/ssrf.ts';
import { startReceiver, type Receiver } from '../helpers/https.ts';
import { claimedDelivery as delivery, testTransport } from './helpers.ts';

/** The host of a URL as the transport sees it: WHATWG parsing canonicalises every IPv4 spelling. */
const hostOf = (literal: string) => new URL(`https://${literal}/`).hostname.replace(/^\[|\]$/g, '');

describe('SSRF guard', () => {
  describe('address classes', () => {
    const cases: Array<[string, 'public' | 'private' | 'metadata']> = [
      ['127.0.0.1', 'private'],
      ['127.1', 'private'],
      ['2130706433', 'private'],
      ['0x7f000001', 'private'],
      ['0177.0.0.1', 'private'],
      ['0', 'private'],
      ['0.0.0.0', 'private'],
      ['10.1.2.3', 'private'],
      ['172.16.0.1', 'private'],
      ['172.31.255.255', 'private'],
      ['192.168.1.1', 'private'],
      ['100.64.0.1', 'private'],
      ['100.127.255.254', 'private'],
      ['169.254.1.1', 'private'],
      ['224.0.0.1', 'private'],
      ['239.255.255.250', 'private'],
      ['255.255.255.255', 'private'],
      ['198.18.0.1', 'private'],
      ['[::1]', 'private'],
      ['[::]', 'private'],
      ['[::ffff:7f00:1]', 'private'],
      ['[::ffff:127.0.0.1]', 'private'],
      ['[::ffff:8.8.8.8]', 'private'],
      ['[fe80::1]', 'private'],
      ['[fc00::1]', 'private'],
      ['[fd12:3456::1]', 'private'],
      ['[ff02::1]', 'private'],
      ['[2002:7f00:1::]', 'private'],
      ['[64:ff9b::a00:1]', 'private'],
      ['[2001:db8::1]', 'private'],
      ['169.254.169.254', 'metadata'],
      ['0xa9fea9fe', 'metadata'],
      ['[fd00:ec2::254]', 'metadata'],
      ['[::ffff:169.254.169.254]', 'metadata'],
      ['[64:ff9b::a9fe:a9fe]', 'metadata'],
      ['100.100.100.200', 'metadata'],
      ['8.8.8.8', 'public'],
      ['1.1.1.1', 'public'],
      ['172.32.0.1', 'public'],
      ['100.128.0.1', 'public'],
      ['[2606:4700:4700::1111]', 'public'],
      ['[2a00:1450:4001::200e]', 'public'],
    ];
    for (const [literal, expected] of cases) {
      it(`${literal} is ${expected}`, () => assert.equal(classifyAddress(hostOf(literal)).class, expected));
    }
  });

  describe('resolution', () => {
    const fake: Resolver = async (name) =>
      ({
        'mixed.test': [{ address: '93.184.216.34', family: 4 }, { address: '10.0.0.7', family: 4 }],
        'meta.test': [{ address: '169.254.169.254', family: 4 }],
        'public.test': [{ address: '93.184.216.34', family: 4 }, { address: '2606:2800:220:1::1', family: 6 }],
      })[name] ?? [];

    it('refuses a name when any of its answers is refused', async () => {
      await assert.rejects(resolveChecked('mixed.test', false, fake), /10\.0\.0\.7/);
    });
    it('refuses a metadata answer even when private destinations are allowed', async () => {
      await assert.rejects(resolveChecked('meta.test', true, fake), { code: 'ERR_WEIR_SSRF' });
    });
    it('returns every checked answer of a public name', async () => {
      assert.equal((await resolveChecked('public.test', false, fake)).length, 2);
    });
  });

  describe('forwards', () => {
    let rx: Receiver;
    before(async () => {
      rx = await startReceiver();
    });
    after(() => rx.close());

    const refusedByDefault = ['127.0.0.1', '127.1', '2130706433', '0x7f000001', '[::ffff:7f00:1]', '[::ffff:127.0.0.1]', '[::1]', 'localhost'];
    for (const host of refusedByDefault) {
      it(`refuses https://${host}:<port> without connecting`, async () => {
        const transport = testTransport({ allowPrivate: false });
        const r = await transport.send(delivery(`https://${host}:${rx.port}/`), new AbortController().signal);
        await transport.close();
        assert.equal(r.errorClass, 'ssrf_refused', r.errorMessage);
        assert.equal(rx.received.length, 0);
      });
    }

    for (const url of ['https://169.254.169.254/latest/meta-data/', 'https://[fd00:ec2::254]/', 'https://0xa9fea9fe/', 'https://meta.test/']) {
      it(`refuses ${url} even with WEIR_ALLOW_PRIVATE_DESTINATIONS=1`, async () => {
        const transport = testTransport({ allowPrivate: true, resolver: async () => [{ address: '169.254.169.254', family: 4 }] });
        const r = await transport.send(delivery(url), new AbortController().signal);
        await transport.close();
        assert.equal(r.errorClass, 'ssrf_refused', r.errorMessage);
      });
    }

    it('refuses a name whose DNS answers include a private address', async () => {
      const transport = testTransport({
        allowPrivate: false,
        resolver: async () => [{ address: '93.184.216.34', family: 4 }, { address: '127.0.0.1', family: 4 }],
      });
      const r = await transport.send(delivery(`https://rebind.test:${rx.port}/`), new AbortController().signal);
      await transport.close();
      assert.equal(r.errorClass, 'ssrf_refused');
      assert.match(r.errorMessage ?? '', /rebind\.test.*127\.0\.0\.1/);
    });

    it('connects to the checked address while verifying the certificate for the name', async () => {
      // the name resolves (through our resolver) to loopback; TLS must still check the certificate against "localhost"
      const transport = testTransport({ allowPrivate: true, resolver: async () => [{ address: '127.0.0.1', family: 4 }] });
      const r = await transport.send(delivery(`https://localhost:${rx.port}/pinned`), new AbortController().signal);
      assert.equal(r.statusCode, 200, r.errorMessage);
      const wrongName = await transport.send(delivery(`https://not-in-the-cert.test:${rx.port}/`), new AbortController().signal);
      await transport.close();
      assert.equal(wrongName.errorClass, 'tls_error', wrongName.errorMessage);
      assert.deepEqual(rx.received.map((x) => x.url), ['/pinned']);
    });

    it('refuses non-https destination URLs', async () => {
      const transport = testTransport();
      const r = await transport.send(delivery(`http://127.0.0.1:${rx.port}/`), new AbortController().signal);
      await transport.close();
      assert.equal(r.errorClass, 'invalid_url');
    });
  });
});

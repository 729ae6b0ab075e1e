import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { asnOfAddress, asnOfUrl, loadStats } from '../../src/incidents/asn.ts';

describe('ASN lookup', () => {
  it('finds IPv4 and IPv6 addresses in the bundled data, loaded on first use, and measures what loading cost', async (t) => {
    assert.equal(loadStats(), undefined, 'nothing is loaded before the first lookup');
    assert.deepEqual(await asnOfAddress('1.1.1.1'), { asn: 13335, org: 'Cloudflare, Inc.' });
    assert.equal((await asnOfAddress('2606:4700:4700::1111'))?.asn, 13335);
    assert.equal((await asnOfAddress('::ffff:1.1.1.1'))?.asn, 13335, 'an IPv4-mapped address');
    assert.equal(await asnOfAddress('127.0.0.1'), undefined, 'loopback is in no AS');
    const stats = loadStats()!;
    assert.ok(stats.rows > 400_000, `${stats.rows} ranges`);
    t.diagnostic(
      `bundled ASN data: ${stats.rows} ranges, loaded in ${stats.ms} ms, ${(stats.retainedBytes / 1048576).toFixed(1)} MiB kept, heap grew ${(stats.heapGrowthBytes / 1048576).toFixed(1)} MiB while loading`,
    );
  });

  it("consults the operator's CSV first, skipping its header and bad lines", async () => {
    const csv = join(tmpdir(), `weir-asn-op-${process.pid}.csv`);
    writeFileSync(csv, 'first_ip,last_ip,asn,asn_org\nnot,an,ip,line\n1.1.1.0,1.1.1.255,64501,"Edge, Override"\nfd00::,fd00::ffff,AS64502,ULA Net\n');
    assert.deepEqual(await asnOfAddress('1.1.1.1', csv), { asn: 64501, org: 'Edge, Override' });
    assert.deepEqual(await asnOfAddress('fd00::1', csv), { asn: 64502, org: 'ULA Net' });
    assert.equal((await asnOfAddress('8.8.8.8', csv))?.asn, 15169, 'falls back to the bundled data');
  });

  it("resolves a destination URL's host; other schemes and unknown names have no ASN", async () => {
    assert.equal((await asnOfUrl('https://1.1.1.1/hook'))?.asn, 13335);
    assert.equal(await asnOfUrl('agent://0190a000-0000-7000-8000-000000000000'), undefined);
    assert.equal(await asnOfUrl('https://no-such-host.invalid/'), undefined);
  });
});

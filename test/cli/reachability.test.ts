import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { unreachableReason, unreachableWarning } from '../../src/cli/user/reachability.ts';

// What `weir listen` warns about: a URL a provider on the internet cannot
// reach. No DNS is needed for any of these cases.
describe('weir listen reachability warning', () => {
  const cases: [string, RegExp][] = [
    ['http://127.0.0.1:8081/h/abc', /127\.0\.0\.1, a loopback address/],
    ['http://[::1]:8081/h/abc', /::1, a loopback address/],
    ['https://10.1.2.3/h/abc', /10\.1\.2\.3, a private \(RFC 1918\) address/],
    ['https://192.168.1.20/h/abc', /private \(RFC 1918\)/],
    ['http://localhost:8081/h/abc', /localhost is a local name/],
    ['http://weir.localhost/h/abc', /is a local name/],
    ['http://devbox/h/abc', /devbox is a local name/],
    ['https://weir.internal/h/abc', /is a local name/],
  ];
  for (const [url, reason] of cases) {
    it(`warns for ${url}`, async () => {
      const r = await unreachableReason(url);
      assert.ok(r, url);
      assert.match(r, reason);
      const line = unreachableWarning(r);
      assert.equal(line.split('\n').length, 1, 'one line');
      assert.match(line, /^weir: warning: .*WEIR_INGEST_URL.*docs\/local-development\.md\.$/);
    });
  }

  it('does not warn for a public address, or for what it cannot parse', async () => {
    assert.equal(await unreachableReason('https://1.1.1.1/h/abc'), undefined);
    assert.equal(await unreachableReason('not a url'), undefined);
  });
});

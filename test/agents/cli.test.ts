import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { closedPort, startReceiver, type Receiver } from '../helpers/https.ts';
import { cleanEnv, runWeirToEnd } from '../helpers/weir-process.ts';
import { startAgent, startLocalServer, type LocalServer } from './helpers.ts';

const TOKEN = 'wr_agent_' + 'D'.repeat(43);

/** What `weir agent` says when it cannot work: bad usage stops it, a server it cannot reach does not. */
describe('weir agent failures', () => {
  let untrusted: Receiver;
  let notWeir: LocalServer;
  before(async () => {
    untrusted = await startReceiver({ untrusted: true });
    notWeir = await startLocalServer();
  });
  after(async () => {
    await Promise.all([untrusted.close(), notWeir.close()]);
  });

  it('refuses bad usage with exit code 2 and the usage', async () => {
    for (const args of [[], ['--server', 'http://127.0.0.1:1'], ['--token', TOKEN], ['--server', 'ftp://x', '--token', TOKEN], ['--nope']]) {
      const r = await runWeirToEnd(['agent', ...args], cleanEnv());
      assert.equal(r.code, 2, args.join(' '));
      assert.match(r.stderr, /usage: weir agent --server/);
    }
  });

  for (const [what, server, reason] of [
    ['nothing listening', async () => `http://127.0.0.1:${await closedPort()}`, /server unreachable: nothing accepts connections/],
    ['an untrusted certificate', async () => `https://127.0.0.1:${untrusted.port}`, /TLS error talking to 127\.0\.0\.1:\d+: .*NODE_EXTRA_CA_CERTS/],
    ['a server that is not Weir', async () => `http://127.0.0.1:${notWeir.port}`, /server answered HTTP 200/],
  ] as const) {
    it(`says why in one line and keeps retrying with backoff: ${what}`, async () => {
      const a = startAgent(await server(), TOKEN);
      try {
        await a.waitForEvent(() => a.events.filter((e) => e.event === 'disconnected').length >= 2, 'two failed attempts');
        const [first, second] = a.events.filter((e) => e.event === 'disconnected');
        assert.match(first.reason, reason);
        assert.equal(second.reason, first.reason);
        assert.ok(first.retry_in_ms >= 250 && second.retry_in_ms >= 500, 'backoff grows');
      } finally {
        a.child.kill('SIGTERM');
        assert.equal(await a.exited, 0, 'stops cleanly while reconnecting');
      }
    });
  }
});

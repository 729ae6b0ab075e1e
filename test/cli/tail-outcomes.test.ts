import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startReceiver, testCa, type Receiver } from '../helpers/https.ts';
import { cleanEnv, freshStore, runWeir, runWeirToEnd, startWeirProcess, type Store, type WeirProcess } from '../helpers/weir-process.ts';

/**
 * Issue 28 item 5: `weir tail` prints the provider's event type on each
 * capture line and each forward's outcome as it completes, against a real
 * Weir forwarding to a real HTTPS receiver.
 */
describe('weir tail: event types and forward outcomes', () => {
  let store: Store;
  let weir: WeirProcess;
  let receiver: Receiver;
  let home: string;

  before(async () => {
    store = await freshStore();
    // GitHub-like deliveries get 503 (retried), everything else 200
    receiver = await startReceiver({ reply: (r) => (r.headers['x-github-event'] ? { status: 503, body: 'down' } : { status: 200 }) });
    weir = await startWeirProcess({ ...store.env, WEIR_ALLOW_PRIVATE_DESTINATIONS: '1', NODE_EXTRA_CA_CERTS: testCa().caFile });
    home = mkdtempSync(join(tmpdir(), 'weir-cli-tail-'));
  });
  after(async () => {
    await weir?.stop('SIGKILL');
    await receiver?.close();
    await store?.drop();
    rmSync(home, { recursive: true, force: true });
  });

  const env = () => cleanEnv({ XDG_CONFIG_HOME: home, HOME: home });
  const weirCli = (args: string[]) => runWeirToEnd(args, env());
  const follow = (args: string[]) => {
    const run = runWeir(args, env());
    const waitFor = async (what: string, ok: (line: string) => boolean, ms = 60_000) => {
      const deadline = Date.now() + ms;
      for (;;) {
        const found = run.out.stdout.split('\n').find(ok);
        if (found) return found;
        if (run.child.exitCode !== null) throw new Error(`weir ${args.join(' ')} exited before ${what}:\n${run.out.stdout}\n${run.out.stderr}`);
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}:\n${run.out.stdout}\n${run.out.stderr}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    return { ...run, waitFor };
  };

  it('names Stripe and GitHub event types and prints a line per forward outcome', async () => {
    assert.equal((await weirCli(['login', '--server', weir.base, '--key', weir.bootstrapKey!])).code, 0);
    const created = await weirCli(['endpoints', 'create', 'shop', '--forward-url', `${receiver.url}/hooks`, '--json']);
    assert.equal(created.code, 0, created.stderr);
    const ep = JSON.parse(created.stdout);

    const json = follow(['tail', 'shop', '--json', '--outcomes-for', '20']);
    const text = follow(['tail', 'shop']);
    try {
      await json.waitFor('the stream to be live', (l) => l.includes('"event":"live"'));
      // the text tail says it follows on stderr once connected; give it the same chance
      for (const deadline = Date.now() + 30_000; !text.out.stderr.includes('Following'); ) {
        if (Date.now() > deadline) throw new Error(`text tail never connected: ${text.out.stderr}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const post = async (body: string, headers: Record<string, string>) => {
        const res = await fetch(`http://127.0.0.1:${weir.ingestPort}/h/${ep.slug}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
        assert.equal(res.status, 200);
        return ((await res.json()) as { request_id: string }).request_id;
      };
      const stripe = await post('{"id":"evt_1","object":"event","type":"payment_intent.succeeded"}', { 'stripe-signature': 't=1,v1=x' });
      const github = await post('{"action":"opened","type":"not-this-one"}', { 'X-GitHub-Event': 'pull_request' });
      const plain = await post('[1,2]', {});

      const captured = async (id: string) => JSON.parse(await json.waitFor(`capture ${id}`, (l) => l.includes(`"id":"${id}"`)));
      assert.equal((await captured(stripe)).event_type, 'payment_intent.succeeded');
      assert.equal((await captured(github)).event_type, 'pull_request', 'the header names it, not the body');
      assert.equal((await captured(plain)).event_type, null);

      const outcome = async (id: string, status: string) =>
        JSON.parse(await json.waitFor(`${status} for ${id}`, (l) => l.includes('"event":"forward"') && l.includes(id) && l.includes(`"status":"${status}"`)));
      const ok = await outcome(stripe, 'succeeded');
      assert.deepEqual([ok.destination, ok.attempt, ok.status_code, ok.final], ['forward_url', 1, 200, true]);
      const retrying = await outcome(github, 'retrying');
      assert.deepEqual([retrying.attempt, retrying.status_code, retrying.final], [1, 503, false]);
      assert.ok(retrying.next_attempt_at, 'a retrying forward says when it is tried next');
      await outcome(plain, 'succeeded');

      // the text tail: the type on the capture line, and an outcome line
      await text.waitFor('the stripe line', (l) => l.includes(stripe) && l.endsWith('  payment_intent.succeeded') && l.includes(' POST '));
      await text.waitFor('the github line', (l) => l.includes(github) && !l.startsWith('  ->') && l.endsWith('  pull_request'));
      await text.waitFor('the outcome line', (l) => /^ {2}-> forward_url {2}succeeded {2}attempt 1 {2}HTTP 200 /.test(l) && l.endsWith(stripe));
      await text.waitFor('the retrying line', (l) => /^ {2}-> forward_url {2}retrying {2}attempt 1 {2}HTTP 503, next attempt \S+/.test(l) && l.endsWith(github));
      assert.ok(receiver.received.length >= 3);

      // following is bounded: the 503 forward (next retry minutes away) gets a last line when --outcomes-for runs out
      const stopped = JSON.parse(await json.waitFor('the last line of the retrying forward', (l) => l.includes(github) && l.includes('"stopped_following":true')));
      assert.equal(stopped.final, false);
      assert.equal(stopped.status, 'retrying');

      // Ctrl-C ends both, promptly: every wait here has a deadline
      for (const t of [json, text]) t.child.kill('SIGINT');
      const exit = (t: typeof json) =>
        Promise.race([t.exited, new Promise((_, reject) => setTimeout(() => reject(new Error('weir tail did not exit on SIGINT')), 15_000).unref())]);
      assert.equal(await exit(json), 0);
      assert.equal(await exit(text), 0);
    } finally {
      json.child.kill('SIGKILL');
      text.child.kill('SIGKILL');
    }
  });

  it('refuses a bad --outcomes-for in one line, exit 2', async () => {
    const bad = await weirCli(['tail', 'shop', '--outcomes-for', 'soon']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--outcomes-for must be 0-3600 seconds, got "soon"/);
  });
});

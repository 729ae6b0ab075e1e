import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { cleanEnv, freshStore, runWeir, runWeirToEnd, startWeirProcess, type Store, type WeirProcess } from '../helpers/weir-process.ts';

/**
 * Issue 28 items 1 and 5 from a user's terminal: `weir listen` to a port
 * nothing answers on, an incident within seconds, `weir incidents ls|show`,
 * `weir replay --failed --endpoint`, and `weir incidents replay --rpm`
 * following its batch once the local service is back.
 */
describe('weir incidents and replay --failed', () => {
  let store: Store;
  let weir: WeirProcess;
  let home: string;

  before(async () => {
    store = await freshStore();
    home = mkdtempSync(join(tmpdir(), 'weir-cli-inc-'));
    const plans = join(home, 'plans.json');
    // incident replay on the bootstrap organization's plan
    writeFileSync(plans, JSON.stringify({ free: { incident_replay: true } }));
    weir = await startWeirProcess({ ...store.env, WEIR_PLANS: plans }, 180_000);
  });
  after(async () => {
    await weir?.stop('SIGKILL');
    await store?.drop();
    rmSync(home, { recursive: true, force: true });
  });

  const env = () => cleanEnv({ XDG_CONFIG_HOME: home, HOME: home });
  const weirCli = (args: string[]) => runWeirToEnd(args, env());
  async function until<T>(what: string, f: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
    const deadline = Date.now() + ms;
    for (;;) {
      const v = await f();
      if (v !== undefined) return v;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  it('finds the incident of a local service that is down, replays the failed captures, and replays the incident at a rate once it is back', async () => {
    assert.equal((await weirCli(['login', '--server', weir.base, '--key', weir.bootstrapKey!])).code, 0);
    // a port nothing listens on yet
    const probe = http.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as { port: number }).port;
    await new Promise((r) => probe.close(r));

    const l = runWeir(['listen', String(port), '/hooks', '--json'], env());
    try {
      const listening = await until('the ingest URL', async () => l.out.stdout.split('\n').find((x) => x.includes('"listening"')));
      await until('the agent to connect', async () => (l.out.stdout.includes('"event":"connected"') ? true : undefined));
      const res = await fetch(`${JSON.parse(listening).ingest_url}/stripe`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"type":"charge.failed"}' });
      const { request_id } = (await res.json()) as { request_id: string };

      const incident = await until('the incident', async () => {
        const r = await weirCli(['incidents', 'ls', '--json']);
        return JSON.parse(r.stdout).data[0];
      });
      assert.equal(incident.failure_count, 1);
      const ls = await weirCli(['incidents', 'ls']);
      assert.match(ls.stdout, new RegExp(`^${incident.id}\\s+open\\s+`, 'm'));
      const show = await weirCli(['incidents', 'show', incident.id]);
      assert.equal(show.code, 0, show.stderr);
      assert.match(show.stdout, /network: an agent/);
      assert.match(show.stdout, new RegExp(`${request_id}\\s+failed\\s+connection_refused`));

      const again = await weirCli(['replay', '--failed', '--endpoint', `dev-${port}`, '--json']);
      assert.equal(again.code, 0, again.stderr);
      assert.deepEqual(JSON.parse(again.stdout).map((r: any) => [r.request_id, r.queued]), [[request_id, true]]);

      // the local service comes back: the incident's replay delivers it, and the command follows the batch to its end
      const got: string[] = [];
      const local = http.createServer((req, res) => {
        let body = '';
        req.on('data', (d) => (body += d));
        req.on('end', () => (got.push(body), res.end('ok')));
      });
      await new Promise<void>((r) => local.listen(port, '127.0.0.1', r));
      try {
        const replay = await weirCli(['incidents', 'replay', incident.id, '--rpm', '6000', '--json']);
        assert.equal(replay.code, 0, replay.stderr);
        const batch = JSON.parse(replay.stdout);
        assert.equal(batch.status, 'finished');
        assert.equal(batch.delivered_count, 1);
        assert.deepEqual(got, ['{"type":"charge.failed"}']);
        const none = await weirCli(['replay', '--failed', '--endpoint', `dev-${port}`]);
        assert.equal(none.stdout, 'No failed captures to replay.\n', 'the capture counts as delivered now');
      } finally {
        local.close();
      }
    } finally {
      l.child.kill('SIGKILL');
    }
  });

  it('refuses bad usage in one line with exit code 2', async () => {
    for (const args of [
      ['incidents', 'replay', '00000000-0000-7000-8000-000000000000', '--rpm', '0'],
      ['incidents', 'ls', '--status', 'nope'],
      ['replay', '--failed'],
      ['replay'],
      ['replay', '00000000-0000-7000-8000-000000000000', '--since', '2026-01-01T00:00:00Z'],
    ]) {
      const r = await weirCli(args);
      assert.equal(r.code, 2, args.join(' '));
      assert.match(r.stderr, /^weir: /);
    }
    const missing = await weirCli(['incidents', 'show', '00000000-0000-7000-8000-000000000000']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /not_found, HTTP 404/);
  });
});

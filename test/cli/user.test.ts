import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { cleanEnv, freshStore, runWeir, runWeirToEnd, startWeirProcess, type Store, type WeirProcess } from '../helpers/weir-process.ts';

/** The user CLI as real processes against a running Weir, with its own config directory. */
describe('weir CLI for users', () => {
  let store: Store;
  let weir: WeirProcess;
  let home: string;

  before(async () => {
    store = await freshStore();
    weir = await startWeirProcess(store.env);
    home = mkdtempSync(join(tmpdir(), 'weir-cli-home-'));
  });
  after(async () => {
    await weir?.stop('SIGKILL');
    await store?.drop();
    rmSync(home, { recursive: true, force: true });
  });

  const env = (extra: Record<string, string> = {}) => cleanEnv({ XDG_CONFIG_HOME: home, HOME: home, ...extra });
  const weirCli = (args: string[], extra?: Record<string, string>) => runWeirToEnd(args, env(extra));
  const ingest = async (slug: string, body: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`http://127.0.0.1:${weir.ingestPort}/h/${slug}/x?y=1`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    assert.equal(res.status, 200);
    return ((await res.json()) as { request_id: string }).request_id;
  };

  /** Lines of a long-running command's stdout, as they arrive. */
  const follow = (args: string[]) => {
    const run = runWeir(args, env());
    const waitFor = async (what: string, ok: (line: string) => boolean) => {
      for (;;) {
        const found = run.out.stdout.split('\n').find(ok);
        if (found) return found;
        if (run.child.exitCode !== null) throw new Error(`weir ${args.join(' ')} exited before ${what}:\n${run.out.stdout}\n${run.out.stderr}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    return { ...run, waitFor };
  };

  it('refuses to work without a login, and a login with a wrong key, in one line', async () => {
    const none = await weirCli(['endpoints', 'ls']);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /^weir: no server: run `weir login/);
    const wrong = await weirCli(['login', '--server', weir.base, '--key', 'wr_live_us_wrong']);
    assert.equal(wrong.code, 1);
    assert.equal(wrong.stderr.trim().split('\n').length, 1);
    assert.match(wrong.stderr, /\(unauthorized, HTTP 401\)$/m);
    const bad = await weirCli(['login', '--server', 'ftp://x', '--key', 'k']);
    assert.equal(bad.code, 2);
  });

  it('logs in (0600), manages endpoints and shows captures byte for byte', async () => {
    const login = await weirCli(['login', '--server', weir.base, '--key', weir.bootstrapKey!, '--json']);
    assert.equal(login.code, 0, login.stderr);
    const { path } = JSON.parse(login.stdout);
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.equal(JSON.parse(readFileSync(path, 'utf8')).key, weir.bootstrapKey);

    const created = await weirCli(['endpoints', 'create', 'cli-hooks', '--json']);
    assert.equal(created.code, 0, created.stderr);
    const ep = JSON.parse(created.stdout);
    const ls = await weirCli(['endpoints', 'ls']);
    assert.match(ls.stdout, new RegExp(`^${ep.id}\\s+cli-hooks\\s+active\\s+${ep.ingest_url}$`, 'm'));

    const id = await ingest(ep.slug, '{"b":[1,2],"a":"x"}', { 'X-Second': 'two', 'x-first': 'one' });
    const list = await weirCli(['requests', 'ls', 'cli-hooks', '--json']);
    assert.deepEqual(JSON.parse(list.stdout).data.map((r: any) => r.id), [id]);
    const show = await weirCli(['requests', 'show', id]);
    assert.equal(show.code, 0, show.stderr);
    assert.match(show.stdout, /^POST \/x\?y=1$/m);
    assert.ok(show.stdout.indexOf('X-Second: two') < show.stdout.indexOf('x-first: one'), 'headers in arrival order, case kept');
    assert.match(show.stdout, /\{\n {2}"b": \[\n {4}1,\n {4}2\n {2}\],\n {2}"a": "x"\n\}/);
    const raw = await weirCli(['requests', 'show', id, '--raw']);
    assert.equal(raw.stdout, '{"b":[1,2],"a":"x"}');

    const paused = await weirCli(['endpoints', 'pause', 'cli-hooks', '--json']);
    assert.equal(JSON.parse(paused.stdout).paused, true);
    const missing = await weirCli(['requests', 'show', '00000000-0000-7000-8000-000000000000']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /^weir: .*\(not_found, HTTP 404\)\n$/);
    const rm = await weirCli(['endpoints', 'rm', ep.id, '--json']);
    assert.deepEqual(JSON.parse(rm.stdout), { deleted: ep.id });
    const gone = await weirCli(['endpoints', 'rm', 'cli-hooks']);
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /no endpoint named "cli-hooks"/);
  });

  it('exports every capture as NDJSON with exact bytes, oldest first, to a file or stdout, within --since', async () => {
    const ep = JSON.parse((await weirCli(['endpoints', 'create', 'exported', '--json'])).stdout);
    const binary = Buffer.from([0xff, 0x00, 0xc3, 0x28, 0x0a]);
    const first = await ingest(ep.slug, '{"n":1}', { 'X-B': '2', 'x-a': '1' });
    const res = await fetch(`http://127.0.0.1:${weir.ingestPort}/h/${ep.slug}`, { method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body: binary });
    const second = ((await res.json()) as { request_id: string }).request_id;
    const third = await ingest(ep.slug, 'not json at all');

    const file = join(home, 'captures.ndjson');
    const toFile = await weirCli(['requests', 'export', 'exported', '--out', file, '--json']);
    assert.equal(toFile.code, 0, toFile.stderr);
    assert.deepEqual(JSON.parse(toFile.stdout), { endpoint_id: ep.id, exported: 3, skipped: 0, body_bytes: 7 + binary.length + 15, out: file, since: null, until: null });
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(lines.map((l) => l.id), [first, second, third], 'oldest first, one capture per line');
    assert.deepEqual(Buffer.from(lines[1].body, 'base64'), binary, 'the bytes exactly');
    assert.equal(Buffer.from(lines[0].body, 'base64').toString(), '{"n":1}');
    assert.ok(lines.every((l) => l.body_encoding === 'base64'));
    assert.deepEqual(lines[0].headers.filter((h: any) => /^x-/i.test(h.name)), [{ name: 'X-B', value: '2' }, { name: 'x-a', value: '1' }]);
    assert.equal(lines[1].method, 'PUT');
    assert.equal(statSync(file).mode & 0o777, 0o600, 'captures hold secrets: the file is private');

    const toStdout = await weirCli(['requests', 'export', ep.id, '--since', lines[1].received_at]);
    assert.equal(toStdout.code, 0, toStdout.stderr);
    const since = toStdout.stdout.trimEnd().split('\n').map((l) => JSON.parse(l).id);
    assert.ok(since.includes(second) && since.includes(third) && since.length <= 3, 'only captures at or after --since');
    assert.match(toStdout.stderr, /^Exported \d captures \(\d+ body bytes\)\n$/, 'the summary on stderr: stdout is the data');
    const none = await weirCli(['requests', 'export', ep.id, '--since', '2999-01-01T00:00:00Z', '--json']);
    assert.equal(none.stdout, '');
    assert.equal(JSON.parse(none.stderr).exported, 0);

    for (const [args, pattern] of [
      [['--since', 'yesterday'], /^weir: Query parameter "since" must be an ISO 8601 timestamp.*\(bad_request, HTTP 400\)\n$/],
      [['--out', join(home, 'no-such-dir', 'x.ndjson')], /^weir: cannot write .*no-such-dir.*\(ENOENT\)\n$/],
    ] as const) {
      const bad = await weirCli(['requests', 'export', ep.id, ...args]);
      assert.equal(bad.code, 1, bad.stderr);
      assert.match(bad.stderr, pattern);
      assert.equal(bad.stdout, '');
    }
    const unknown = await weirCli(['requests', 'export', 'no-such-endpoint', '--out', join(home, 'never.ndjson')]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /^weir: no endpoint named "no-such-endpoint" \(not_found, HTTP 404\)\n$/);
    assert.throws(() => statSync(join(home, 'never.ndjson')), 'nothing written when the export fails');
  });

  it('tails an endpoint, one line per capture', async () => {
    const ep = JSON.parse((await weirCli(['endpoints', 'create', 'tailed', '--json'])).stdout);
    const t = follow(['tail', 'tailed', '--json']);
    try {
      await t.waitFor('the stream to be live', (l) => l.includes('"event":"live"'));
      const id = await ingest(ep.slug, '{}');
      const line = await t.waitFor('the capture', (l) => l.includes(id));
      assert.equal(JSON.parse(line).method, 'POST');
      t.child.kill('SIGINT');
      assert.equal(await t.exited, 0);
    } finally {
      t.child.kill('SIGKILL');
    }
  });

  it('listen: one command creates the endpoint, agent and destination, prints the URL and forwards to the local port; replay sends it again', async () => {
    const got: Array<{ url: string; body: string }> = [];
    const local = http.createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        got.push({ url: req.url ?? '', body });
        res.end('ok');
      });
    });
    await new Promise<void>((r) => local.listen(0, '127.0.0.1', r));
    const port = (local.address() as { port: number }).port;
    for (let round = 0; round < 2; round++) {
      // the second run reuses the endpoint and agent by name
      const l = follow(['listen', String(port), '/webhooks', '--json']);
      try {
        const listening = JSON.parse(await l.waitFor('the ingest URL', (x) => x.includes('"listening"')));
        await l.waitFor('the agent to connect', (x) => x.includes('"event":"connected"'));
        const res = await fetch(`${listening.ingest_url}/stripe`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: `{"round":${round}}` });
        assert.equal(res.status, 200);
        const { request_id } = (await res.json()) as { request_id: string };
        const fwd = JSON.parse(await l.waitFor('the forward line', (x) => x.includes('"forward"') && x.includes(request_id)));
        assert.equal(fwd.status, 200);
        assert.deepEqual(got[round], { url: '/webhooks/stripe', body: `{"round":${round}}` });
        if (round === 1) {
          // several at once: each is tried, a failure is reported and makes the exit code 1
          const unknown = '00000000-0000-7000-8000-000000000000';
          const replay = await weirCli(['replay', request_id, unknown, '--json']);
          assert.equal(replay.code, 1, replay.stderr);
          assert.deepEqual(
            JSON.parse(replay.stdout).map((r: any) => [r.request_id, r.queued, r.error?.code]),
            [[request_id, true, undefined], [unknown, false, 'not_found']],
          );
          await l.waitFor('the replayed forward', () => l.out.stdout.split('\n').filter((x) => x.includes('"forward"') && x.includes(request_id)).length === 2);
          assert.deepEqual(got[2], got[1]);
        }
        l.child.kill('SIGINT');
        assert.equal(await l.exited, 0);
        // the URL is on loopback: one line on stderr says so and what to do
        const warnings = l.out.stderr.split('\n').filter((x) => x.startsWith('weir: warning:'));
        assert.equal(warnings.length, 1, l.out.stderr);
        assert.match(warnings[0], /providers cannot reach this URL \(127\.0\.0\.1, a loopback address\)\. Run Weir on a host they can reach, with WEIR_INGEST_URL/);
      } finally {
        l.child.kill('SIGKILL');
      }
    }
    const eps = JSON.parse((await weirCli(['endpoints', 'ls', '--json'])).stdout).filter((e: any) => e.name === `dev-${port}`);
    assert.equal(eps.length, 1, 'one endpoint across both runs');
    local.close();
  });
});

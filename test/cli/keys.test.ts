import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { onPostgres } from '../helpers/db.ts';
import { cleanEnv, freshStore, http, runWeirToEnd, startWeirProcess, type Store, type WeirProcess } from '../helpers/weir-process.ts';

/** `weir keys create` as a real process against the database `weir serve` uses, with no operator token. */
describe('weir keys create', () => {
  let store: Store;
  let weir: WeirProcess | undefined;
  let firstKey: string;

  before(async () => {
    store = await freshStore();
    weir = await startWeirProcess(store.env);
    firstKey = weir.bootstrapKey!;
    assert.ok(firstKey, 'the first start printed a key');
    assert.match(weir.stdout(), /Lost it\? (Stop Weir, then run|Run): npx weir keys create/);
  });
  after(async () => {
    await weir?.stop('SIGKILL');
    await store?.drop();
  });

  const keys = (args: string[]) => runWeirToEnd(['keys', ...args], cleanEnv(store.env));
  const start = async () => (weir = await startWeirProcess(store.env));
  const stop = async () => {
    await weir?.stop();
    weir = undefined;
  };
  const me = async (key: string) => {
    if (!weir) await start();
    return http(weir!.base, 'GET', '/v1/me', { token: key });
  };

  it('refuses clearly while the PGlite server holds the data directory, and works alongside it on PostgreSQL', async () => {
    const r = await keys(['create']);
    if (onPostgres) {
      assert.equal(r.code, 0, r.stderr);
      const key = /^\s+(wr_live_\S+)$/m.exec(r.stdout)![1];
      assert.equal((await me(key)).status, 200, 'the running node accepts the new key at once');
      return;
    }
    assert.equal(r.code, 1);
    assert.match(r.stderr, /is open in a running Weir \(pid \d+\)/);
    assert.match(r.stderr, /stop that Weir/);
    assert.match(r.stderr, /dashboard \(API keys\)/);
    assert.equal(r.stdout, '');
  });

  it('mints a full-access key for the first super_admin once the server is stopped, which then signs in', async () => {
    if (!onPostgres) await stop();
    const r = await keys(['create']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Created API key "cli" \(full access\) for admin@localhost \(super_admin\) in organization "Default"/);
    const key = /^\s+(wr_live_\S+)$/m.exec(r.stdout)![1];
    const answer = await me(key);
    assert.equal(answer.status, 200);
    assert.equal(answer.json.data.member.email, 'admin@localhost');
    if (!onPostgres) assert.match(weir!.stdout(), /No key\? Stop Weir, then run: npx weir keys create/, 'every later start says how to get a key');
    assert.equal(answer.json.data.api_key.access_mode, 'full');
    assert.equal((await me(firstKey)).status, 200, 'the first key still works');
  });

  it('takes --org, --member (id or email), --name and --json', async () => {
    const who = (await me(firstKey)).json.data;
    const invited = await http(weir!.base, 'POST', '/v1/members', { token: firstKey, body: { email: 'Dev@Example.com', role: 'developer' } });
    assert.equal(invited.status, 201);
    if (!onPostgres) await stop();
    const byEmail = await keys(['create', '--org', who.organization.id, '--member', 'dev@example.com', '--name', 'laptop', '--json']);
    assert.equal(byEmail.code, 0, byEmail.stderr);
    const made = JSON.parse(byEmail.stdout);
    assert.equal(made.name, 'laptop');
    assert.equal(made.organization_id, who.organization.id);
    assert.match(made.key, /^wr_live_/);
    const byId = await keys(['create', '--member', who.member.id, '--json']);
    assert.equal(byId.code, 0, byId.stderr);
    assert.equal(JSON.parse(byId.stdout).member_id, who.member.id);
    const answer = await me(made.key);
    assert.equal(answer.status, 200);
    assert.equal(answer.json.data.member.email, 'Dev@Example.com');
    assert.equal(answer.json.data.member.role, 'developer');
  });

  it('says what is wrong with a bad option, an unknown member or an empty folder, and exits non-zero', async () => {
    if (!onPostgres) await stop();
    const usage = await keys([]);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /usage: weir keys create/);
    const help = await keys(['--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /--member/);
    assert.equal((await keys(['create', '--org', 'nope'])).code, 2);
    const nobody = await keys(['create', '--member', 'nobody@example.com']);
    assert.equal(nobody.code, 1);
    assert.match(nobody.stderr, /no member "nobody@example.com"/);
    const empty = mkdtempSync(join(tmpdir(), 'weir-empty-'));
    try {
      const r = await runWeirToEnd(['keys', 'create'], cleanEnv({ WEIR_DATA_DIR: empty }));
      assert.equal(r.code, 1);
      assert.match(r.stderr, /no Weir database in WEIR_DATA_DIR/);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});

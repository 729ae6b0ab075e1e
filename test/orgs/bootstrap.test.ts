import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { onPostgres } from '../helpers/db.ts';
import { freshStore, http, startWeirProcess } from '../helpers/weir-process.ts';

// First start of the real CLI on an empty database: a default organization,
// a super_admin and a full-access key, printed once and never again.

describe('weir serve on an empty database', () => {
  it('prints a working super_admin key on the first start only, on the self_hosted plan', async (t) => {
    const store = await freshStore();
    t.after(() => store.drop());

    const first = await startWeirProcess(store.env);
    t.after(() => first.stop('SIGKILL'));
    const key = first.bootstrapKey;
    assert.match(key ?? '', /^wr_live_us_[0-9A-Za-z]{38}$/, first.stdout());
    assert.equal(first.stdout().split(key!).length - 1, 2, 'the key line and the curl example');
    assert.match(first.stdout(), /First start: created organization "Default" \(plan self_hosted\) and super_admin admin@localhost/);
    assert.match(first.stdout(), /API: +http:\/\/127\.0\.0\.1:\d+\/v1/);
    assert.match(first.stdout(), /Dashboard: +http:\/\/127\.0\.0\.1:\d+\//);
    assert.match(first.stdout(), /Ingest: +http:\/\/127\.0\.0\.1:\d+\/h\/\{slug\}/);
    const me = await http(first.base, 'GET', '/v1/me', { token: key });
    assert.equal(me.status, 200);
    assert.equal(me.json.data.member.role, 'super_admin');
    assert.equal(me.json.data.api_key.access_mode, 'full');
    assert.equal(me.json.data.organization.plan, 'self_hosted');
    assert.equal(me.json.data.organization.limits.incident_replay, true, 'no feature held back on a self-hosted install');
    assert.equal(await first.stop(), 0);

    const second = await startWeirProcess(store.env);
    t.after(() => second.stop('SIGKILL'));
    assert.equal(second.bootstrapKey, undefined, second.stdout());
    assert.doesNotMatch(second.stdout(), /First start|wr_live_/);
    assert.equal((await http(second.base, 'GET', '/v1/me', { token: key })).status, 200, 'the first key still works');
    assert.equal(await second.stop(), 0);
  });

  it('starts the first organization on free when the operator sets WEIR_PLANS (inline JSON)', async (t) => {
    const store = await freshStore();
    t.after(() => store.drop());
    const weir = await startWeirProcess({ ...store.env, WEIR_PLANS: '{"free": {"max_endpoints": 4}}' });
    t.after(() => weir.stop('SIGKILL'));
    assert.match(weir.stdout(), /\(plan free\)/);
    const org = (await http(weir.base, 'GET', '/v1/me', { token: weir.bootstrapKey })).json.data.organization;
    assert.equal(org.plan, 'free');
    assert.equal(org.limits.max_endpoints, 4);
    assert.equal(org.limits.incident_replay, false);
  });

  it('uses WEIR_REGION for the default organization and its key', async (t) => {
    const store = await freshStore();
    t.after(() => store.drop());
    const weir = await startWeirProcess({ ...store.env, WEIR_REGION: 'eu' });
    t.after(() => weir.stop('SIGKILL'));
    assert.match(weir.bootstrapKey ?? '', /^wr_live_eu_/);
    assert.equal((await http(weir.base, 'GET', '/v1/me', { token: weir.bootstrapKey })).json.data.organization.region, 'eu');
  });

  it(onPostgres ? 'prints one key when two nodes start on one empty database at once' : 'refuses a second process on the same embedded data directory', async (t) => {
    const store = await freshStore();
    t.after(() => store.drop());
    if (onPostgres) {
      const nodes = await Promise.all([startWeirProcess(store.env), startWeirProcess(store.env)]);
      for (const n of nodes) t.after(() => n.stop('SIGKILL'));
      assert.equal(nodes.filter((n) => n.bootstrapKey).length, 1);
      const key = nodes.find((n) => n.bootstrapKey)!.bootstrapKey;
      for (const n of nodes) assert.equal((await http(n.base, 'GET', '/v1/me', { token: key })).status, 200);
    } else {
      const first = await startWeirProcess(store.env);
      t.after(() => first.stop('SIGKILL'));
      await assert.rejects(startWeirProcess(store.env), new RegExp(`in use by another Weir process: pid ${first.child.pid} \\(.*bin/weir\\.mjs serve\\)`));
    }
  });
});

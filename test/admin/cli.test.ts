import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { cleanEnv, freshStore, http, runWeirToEnd, startWeirProcess, type Store, type WeirProcess } from '../helpers/weir-process.ts';

// `npx weir admin ...` end to end against a running node.

const TOKEN = 'cli-test-operator-token-42';
let store: Store;
let weir: WeirProcess;

before(async () => {
  store = await freshStore();
  weir = await startWeirProcess({ ...store.env, WEIR_ADMIN_TOKEN: TOKEN });
});

after(async () => {
  await weir?.stop();
  await store?.drop();
});

async function admin(args: string[], env: Record<string, string> = {}) {
  const res = await runWeirToEnd(['admin', ...args], cleanEnv({ WEIR_ADMIN_TOKEN: TOKEN, ...env }));
  let json: any;
  try {
    json = JSON.parse(res.stdout);
  } catch {
    json = undefined;
  }
  return { ...res, json };
}

describe('weir admin', () => {
  it('happy: provisions an organization, a member and a scoped key, changes them and revokes the key', async () => {
    const server = ['--server', weir.base];
    const org = await admin(['org', 'create', '--name', 'CLI Co', '--plan', 'starter', '--region', 'eu', ...server]);
    assert.equal(org.code, 0, org.stderr);
    assert.deepEqual([org.json.data.name, org.json.data.plan, org.json.data.region], ['CLI Co', 'starter', 'eu']);
    const orgId = org.json.data.id;
    const listed = await admin(['org', 'get', orgId, '--json', ...server]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.equal(listed.json.data.id, orgId, '--json is accepted: the answer is JSON either way');

    const member = await admin(['member', 'add', orgId, '--email', 'cli@example.com', '--role', 'admin', ...server]);
    assert.equal(member.code, 0, member.stdout);
    const memberId = member.json.data.id;

    const key = await admin(['key', 'create', memberId, '--name', 'from cli', '--scopes', 'members:manage, usage:read', '--expires-at', '2099-01-01T00:00:00Z', ...server]);
    assert.equal(key.code, 0, key.stdout);
    assert.match(key.json.data.key, /^wr_live_eu_/);
    assert.equal(key.json.data.access_mode, 'custom');
    assert.deepEqual(key.json.data.scopes, ['members:manage', 'usage:read']);
    assert.equal((await http(weir.base, 'GET', '/v1/members', { token: key.json.data.key })).status, 200);

    assert.equal((await admin(['org', 'list', ...server])).json.data.data.some((o: { id: string }) => o.id === orgId), true);
    assert.equal((await admin(['org', 'get', orgId, ...server])).json.data.limits.incident_replay, true);
    assert.equal((await admin(['org', 'set-plan', orgId, '--plan', 'pro', ...server])).json.data.plan, 'pro');
    assert.equal((await admin(['member', 'list', orgId, ...server])).json.data.data[0].id, memberId);
    assert.equal((await admin(['key', 'list', memberId, ...server])).json.data.data[0].id, key.json.data.id);

    await admin(['member', 'add', orgId, '--email', 'boss@example.com', '--role', 'super_admin', ...server]);
    const demoted = await admin(['member', 'update', memberId, '--role', 'viewer', ...server]);
    assert.equal(demoted.json.data.role, 'viewer');
    assert.equal((await http(weir.base, 'GET', '/v1/members', { token: key.json.data.key })).status, 200, 'viewers may list members');
    const paused = await admin(['member', 'update', memberId, '--active', 'false', ...server]);
    assert.equal(paused.json.data.active, false);
    assert.equal((await http(weir.base, 'GET', '/v1/me', { token: key.json.data.key })).status, 401);
    await admin(['member', 'update', memberId, '--active', 'true', ...server]);

    const revoke = await admin(['key', 'revoke', key.json.data.id, ...server]);
    assert.equal(revoke.code, 0);
    assert.equal(revoke.stdout.trim(), '204');
    assert.equal((await http(weir.base, 'GET', '/v1/me', { token: key.json.data.key })).status, 401);

    const agent = await admin(['agent', 'enroll', orgId, '--name', 'ci runner', '--environment', 'production', ...server]);
    assert.equal(agent.code, 0, agent.stdout);
    assert.match(agent.json.data.token, /^wr_agent_/);
    assert.equal(agent.json.data.environment, 'production');

    const log = await admin(['org', 'audit-log', orgId, ...server]);
    const actions = log.json.data.data.map((e: { action: string }) => e.action);
    for (const a of ['api_key.created', 'api_key.revoked', 'member.role_changed', 'member.deactivated', 'member.reactivated', 'agent.enrolled']) assert.ok(actions.includes(a), a);
  });

  it('happy: finds the server through WEIR_PUBLIC_URL or WEIR_API_PORT and the token through --token', async () => {
    const viaUrl = await runWeirToEnd(['admin', 'org', 'list', '--token', TOKEN], cleanEnv({ WEIR_PUBLIC_URL: weir.base }));
    assert.equal(viaUrl.code, 0, viaUrl.stderr);
    const viaPort = await admin(['org', 'list'], { WEIR_API_PORT: String(weir.apiPort) });
    assert.equal(viaPort.code, 0, viaPort.stderr);
  });

  it('error: prints the error answer and exits 1', async () => {
    const res = await admin(['member', 'add', '01900000-0000-7000-8000-000000000000', '--email', 'x@example.com', '--role', 'admin', '--server', weir.base]);
    assert.equal(res.code, 1);
    assert.equal(res.json.error.code, 'not_found');
    assert.match(res.stderr, /^weir admin: Organization \S+ not found\. \(not_found, HTTP 404\)\n$/, 'and one line for people');
    const bad = await admin(['key', 'create', '01900000-0000-7000-8000-000000000000', '--name', 'x', '--scopes', '', '--server', weir.base]);
    assert.equal(bad.code, 1);
    assert.equal(bad.json.error.code, 'bad_request', 'an empty --scopes is a custom key with zero scopes');
    const wrong = await admin(['org', 'list', '--server', weir.base, '--token', 'not-the-token-at-all']);
    assert.equal(wrong.code, 1);
    assert.equal(wrong.json.error.code, 'unauthorized');
  });

  it('error: exits 2 with the usage on a bad command line or without a token', async () => {
    for (const args of [['org'], ['frobnicate', 'now'], ['org', 'list', '--bogus'], ['org', 'get'], ['member', 'update', 'x', '--active', 'maybe'], ['org', 'set-plan', 'x']]) {
      const res = await admin([...args, '--server', weir.base]);
      assert.equal(res.code, 2, args.join(' '));
      assert.match(res.stderr, /usage: weir admin/);
    }
    const noToken = await runWeirToEnd(['admin', 'org', 'list', '--server', weir.base], cleanEnv());
    assert.equal(noToken.code, 2);
    assert.match(noToken.stderr, /set WEIR_ADMIN_TOKEN or pass --token/);
    const help = await admin(['--help']);
    assert.equal(help.code, 0);
    assert.match(help.stderr, /org create --name NAME/);
  });

  it('error: says which server it cannot reach and exits 1', async () => {
    const res = await admin(['org', 'list', '--server', 'http://127.0.0.1:9']);
    assert.equal(res.code, 1);
    assert.match(res.stderr, /cannot reach http:\/\/127\.0\.0\.1:9/);
  });
});

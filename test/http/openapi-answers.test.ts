import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Ajv } from 'ajv';
import type { FastifyInstance, RouteOptions } from 'fastify';
import pino from 'pino';
import { Authenticator } from '../../src/auth/authenticate.ts';
import { buildApp } from '../../src/http/app.ts';
import type { RouteModule } from '../../src/http/deps.ts';
import { DEFAULT_PLANS } from '../../src/orgs/plans.ts';
import { routeModules } from '../../src/routes.ts';
import { ADMIN_TOKEN, seedOrg, testConfig } from '../helpers/app.ts';
import { openTestDb, type TestDb } from '../helpers/db.ts';
import { insertCaptures } from '../helpers/fixtures.ts';
import { seedIncident } from '../incidents/helpers.ts';

const UNKNOWN_ID = '00000000-0000-7000-8000-000000000000';
const MAX_ENDPOINTS = 3;

interface Operation {
  path: string;
  method: string;
  op: any;
}

/**
 * The drift test: every operation of the OpenAPI document is called through
 * the real app until it answers success, and every answer it gives (success
 * and each error the walk provokes: 400, 403, 404, 409, 413, 429) must be a
 * status the document lists for it and validate against the schema listed.
 * Each JSON answer is also compared with what JSON.stringify would have sent
 * for the handler's value: a response schema serialises only what it names,
 * so a field a presenter writes but the schema lacks would otherwise vanish
 * from the API without any test noticing.
 */
describe('OpenAPI document against every real answer', () => {
  let t: TestDb;
  let app: FastifyInstance;
  let authenticator: Authenticator;
  let doc: any;
  let base = '';
  const ajv = new Ajv({ strict: false, formats: { uuid: /^[0-9a-f-]{36}$/i, 'date-time': (s: string) => !Number.isNaN(Date.parse(s)), binary: true } });
  /** What JSON.stringify would have written, by request id (the preSerialization hook). */
  const unserialised = new Map<string, string>();
  const routes: RouteOptions[] = [];
  // first in each tree, so that it sees every route and its hook applies to every route
  const observe: RouteModule = (instance) => {
    instance.addHook('onRoute', (r) => void routes.push(r));
    instance.addHook('preSerialization', async (request, _reply, payload) => {
      unserialised.set(request.id, JSON.stringify(payload));
      return payload;
    });
  };
  /** `${METHOD} ${path}` -> the statuses seen. */
  const seen = new Map<string, Set<number>>();
  let operations: Operation[] = [];
  let requestNo = 0;

  before(async () => {
    t = await openTestDb();
    authenticator = new Authenticator(t.db);
    await authenticator.start();
    const plans = { ...DEFAULT_PLANS, starter: { ...DEFAULT_PLANS.starter, max_endpoints: MAX_ENDPOINTS, incident_replay: true } };
    app = await buildApp(
      { db: t.db, config: testConfig({ plans }), authenticator, logger: pino({ level: 'silent' }), urls: { publicUrl: 'http://api.test', ingestUrl: 'http://ingest.test' } },
      { v1: [observe, ...routeModules.v1], root: [observe, ...routeModules.root] },
    );
    base = await app.listen({ host: '127.0.0.1', port: 0 });
    doc = (await app.inject({ method: 'GET', url: '/v1/openapi.json' })).json();
    operations = Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, ops]) =>
      Object.entries(ops).map(([method, op]) => ({ path, method: method.toUpperCase(), op })),
    );
  });
  after(async () => {
    await app?.close();
    await authenticator?.stop();
    await t?.close();
  });

  const operationOf = (method: string, path: string): Operation => {
    const o = operations.find((x) => x.method === method && x.path === path);
    assert.ok(o, `${method} ${path} is in the document`);
    return o;
  };

  /**
   * Calls one documented operation: `path` is the document's template, `url`
   * the concrete one. Checks the answer against the document and returns it.
   */
  async function call(method: string, path: string, opts: { url?: string; body?: unknown; raw?: string; token?: string; expect?: number } = {}) {
    const o = operationOf(method, path);
    const id = `drift-${++requestNo}`;
    const res = await app.inject({
      method: method as never,
      url: opts.url ?? path,
      headers: {
        'x-request-id': id,
        authorization: `Bearer ${opts.token ?? (path.startsWith('/admin/') ? ADMIN_TOKEN : key)}`,
        ...(opts.body !== undefined || opts.raw !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      payload: opts.raw ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body)),
    });
    const where = `${method} ${opts.url ?? path} answered ${res.statusCode} ${res.body.slice(0, 300)}`;
    if (opts.expect !== undefined) assert.equal(res.statusCode, opts.expect, where);
    const documented = o.op.responses[String(res.statusCode)];
    assert.ok(documented, `${where}: a status the document does not list`);
    const key_ = `${method} ${path}`;
    if (!seen.has(key_)) seen.set(key_, new Set());
    seen.get(key_)!.add(res.statusCode);
    const media = documented.content && Object.keys(documented.content)[0];
    if (!media) {
      assert.equal(res.body, '', `${where}: documented without a body`);
      return res;
    }
    // the captured body (its own content-type, checked byte for byte by the walk) and the event stream
    if (media !== 'application/json') return res;
    const body = res.json();
    assert.ok(ajv.validate(documented.content[media].schema, body), `${where}: ${ajv.errorsText()}`);
    const plain = unserialised.get(id);
    if (plain !== undefined) assert.deepEqual(body, JSON.parse(plain), `${where}: the response schema changed or dropped a field of the handler's answer`);
    return res;
  }

  let key = '';

  it('every operation answers success as documented, every field kept', async () => {
    const seeded = await seedOrg(t.db, { plan: 'starter' });
    key = seeded.key;
    const org = seeded.org;
    const json = async (method: string, path: string, opts: Parameters<typeof call>[2] = {}) => (await call(method, path, opts)).json();

    await call('GET', '/v1/me', { expect: 200 });
    await call('GET', '/v1/health', { expect: 200 });
    await call('GET', '/v1/usage', { expect: 200 });

    // endpoints, captures and the plan limit (429)
    const ep = (await json('POST', '/v1/endpoints', { body: { name: 'Stripe', forward_url: 'https://example.com/hook' }, expect: 201 })).data;
    await call('GET', '/v1/endpoints', { expect: 200 });
    await call('GET', '/v1/endpoints/{id}', { url: `/v1/endpoints/${ep.id}`, expect: 200 });
    await call('PATCH', '/v1/endpoints/{id}', { url: `/v1/endpoints/${ep.id}`, body: { description: 'payments' }, expect: 200 });
    const [capture] = await insertCaptures(t.db, { id: ep.id, organization_id: org.id }, [
      { body: Buffer.from([0xff, 0x00, 0x7b]), headers: [['X-A', '1'], ['x-a', '2'], ['Content-Type', 'application/octet-stream']] },
      { body: '{"a":1}', headers: [['content-type', 'application/json']] },
    ]);
    await call('GET', '/v1/endpoints/{id}/requests', { url: `/v1/endpoints/${ep.id}/requests?limit=1`, expect: 200 });
    await call('GET', '/v1/requests/{id}', { url: `/v1/requests/${capture.id}`, expect: 200 });
    const body = await call('GET', '/v1/requests/{id}/body', { url: `/v1/requests/${capture.id}/body`, expect: 200 });
    assert.deepEqual(body.rawPayload, Buffer.from([0xff, 0x00, 0x7b]));
    // the stream never ends by itself: over a socket, read the head and hang up
    const ctl = new AbortController();
    const stream = await fetch(`${base}/v1/endpoints/${ep.id}/requests/stream`, { headers: { authorization: `Bearer ${key}` }, signal: ctl.signal });
    assert.equal(stream.status, 200);
    assert.equal(String(stream.headers.get('content-type')).split(';')[0], Object.keys(operationOf('GET', '/v1/endpoints/{id}/requests/stream').op.responses['200'].content)[0]);
    ctl.abort();
    seen.set('GET /v1/endpoints/{id}/requests/stream', new Set([200]));
    for (let i = 1; i < MAX_ENDPOINTS; i++) await call('POST', '/v1/endpoints', { body: { name: `e${i}` }, expect: 201 });
    await call('POST', '/v1/endpoints', { body: { name: 'one too many' }, expect: 429 });

    // replay and the forwards of a request
    await call('POST', '/v1/requests/{id}/replay', { url: `/v1/requests/${capture.id}/replay`, expect: 202 });
    await call('POST', '/v1/requests/{id}/filter-test', { url: `/v1/requests/${capture.id}/filter-test`, body: { filter: { body: { type: 'x' } } }, expect: 200 });
    await call('POST', '/v1/requests/{id}/transform-test', {
      url: `/v1/requests/${capture.id}/transform-test`,
      body: { code: 'function handler(request) { console.log(request.method); return { ...request, path: "/moved" }; }' },
      expect: 200,
    });
    // a transformed attempt as the completion statement stores it, on the replay's delivery
    const [replayed] = (await t.db.query<{ id: string }>('select id from deliveries where request_id = $1', [capture.id])).rows;
    await t.db.query(
      `insert into delivery_attempts (id, delivery_id, organization_id, attempt_number, started_at, duration_ms, url, status_code, transformation_hash, sent_request)
       values (gen_random_uuid(), $1, $2, 1, now(), 3, 'https://example.com/moved', 200, $3, $4::jsonb)`,
      [replayed.id, org.id, 'a'.repeat(64), JSON.stringify({ method: 'POST', url: 'https://example.com/moved', path: '/moved', query: '', headers: ['content-type', 'application/json'], body_base64: Buffer.from('{"a":1}').toString('base64') })],
    );
    await call('GET', '/v1/requests/{id}/forwards/{delivery_id}/transformed', { url: `/v1/requests/${capture.id}/forwards/${replayed.id}/transformed`, expect: 200 });

    // agents
    const agent = (await json('POST', '/v1/agents', { body: { name: 'laptop' }, expect: 201 })).data;
    await call('GET', '/v1/agents', { expect: 200 });
    await call('GET', '/v1/agents/{id}', { url: `/v1/agents/${agent.id}`, expect: 200 });
    await call('PATCH', '/v1/agents/{id}', { url: `/v1/agents/${agent.id}`, body: { name: 'alice-laptop' }, expect: 200 });
    await call('POST', '/v1/agents/{id}/token', { url: `/v1/agents/${agent.id}/token`, expect: 200 });

    // destinations: saved (HTTPS, attached at creation), an agent one, attaching a second saved one
    const saved = (await json('POST', '/v1/destinations', { body: { name: 'Staging', url: 'https://staging.example.com/hook', endpoint_id: ep.id }, expect: 201 })).data;
    assert.ok(saved.forward_destination_id);
    const agentDest = (
      await json('POST', '/v1/destinations', {
        body: { name: 'Laptop', destination_type: 'agent', endpoint_id: ep.id, agent_id: agent.id, target_port: 3000, target_path: '/hooks' },
        expect: 201,
      })
    ).data;
    const other = (await json('POST', '/v1/destinations', { body: { name: 'Other', url: 'https://other.example.com/hook' }, expect: 201 })).data;
    await call('GET', '/v1/destinations', { expect: 200 });
    await call('GET', '/v1/destinations/{id}', { url: `/v1/destinations/${saved.id}`, expect: 200 });
    await call('PATCH', '/v1/destinations/{id}', { url: `/v1/destinations/${saved.id}`, body: { name: 'Staging API' }, expect: 200 });
    const attached = (await json('POST', '/v1/endpoints/{id}/destinations', { url: `/v1/endpoints/${ep.id}/destinations`, body: { destination_id: other.id }, expect: 201 })).data;
    await call('POST', '/v1/endpoints/{id}/destinations', { url: `/v1/endpoints/${ep.id}/destinations`, body: { destination_id: other.id }, expect: 409 });
    await call('GET', '/v1/endpoints/{id}/destinations', { url: `/v1/endpoints/${ep.id}/destinations`, expect: 200 });
    await call('PATCH', '/v1/endpoints/{id}/destinations/{destination_id}', {
      url: `/v1/endpoints/${ep.id}/destinations/${attached.id}`,
      body: { enabled: false, rate_limit_enabled: true, rate_limit_per_minute: 60 },
      expect: 200,
    });
    await call('PATCH', '/v1/endpoints/{id}/destinations/{destination_id}', { url: `/v1/endpoints/${ep.id}/destinations/${agentDest.id}`, body: { target_path: '/h' }, expect: 200 });
    await call('DELETE', '/v1/endpoints/{id}/destinations/{destination_id}', { url: `/v1/endpoints/${ep.id}/destinations/${attached.id}`, expect: 204 });
    await call('DELETE', '/v1/destinations/{id}', { url: `/v1/destinations/${other.id}`, expect: 204 });

    // members and keys (409 for a second invitation of one email)
    const member = (await json('POST', '/v1/members', { body: { email: 'dev@example.com', role: 'developer' }, expect: 201 })).data;
    await call('POST', '/v1/members', { body: { email: 'dev@example.com', role: 'developer' }, expect: 409 });
    await call('GET', '/v1/members', { expect: 200 });
    await call('GET', '/v1/members/{id}', { url: `/v1/members/${member.id}`, expect: 200 });
    await call('PATCH', '/v1/members/{id}', { url: `/v1/members/${member.id}`, body: { role: 'viewer' }, expect: 200 });
    const newKey = (await json('POST', '/v1/api-keys', { body: { name: 'ci', access_mode: 'custom', scopes: ['usage:read'] }, expect: 201 })).data;
    assert.match(newKey.key, /_live_/);
    await call('GET', '/v1/api-keys', { expect: 200 });
    await call('PATCH', '/v1/api-keys/{id}', { url: `/v1/api-keys/${newKey.id}`, body: { access_mode: 'custom', scopes: ['usage:read', 'endpoints:read'] }, expect: 200 });
    await call('DELETE', '/v1/api-keys/{id}', { url: `/v1/api-keys/${newKey.id}`, expect: 204 });
    await call('GET', '/v1/audit-log', { expect: 200 });

    // subscriptions
    await call('GET', '/v1/subscriptions/sample/{endpointId}', { url: `/v1/subscriptions/sample/${ep.id}`, expect: 200 });
    const sub = (await json('POST', '/v1/subscriptions', { body: { target_url: 'https://hooks.example.com/weir', event_types: ['request.captured', 'incident.opened'] }, expect: 201 })).data;
    await call('GET', '/v1/subscriptions', { expect: 200 });
    await call('GET', '/v1/subscriptions/{id}', { url: `/v1/subscriptions/${sub.id}`, expect: 200 });
    await call('GET', '/v1/subscriptions/{id}/events', { url: `/v1/subscriptions/${sub.id}/events`, expect: 200 });
    await call('POST', '/v1/subscriptions/{id}/rotate-secret', { url: `/v1/subscriptions/${sub.id}/rotate-secret`, expect: 200 });
    await call('DELETE', '/v1/subscriptions/{id}', { url: `/v1/subscriptions/${sub.id}`, expect: 204 });

    // incidents and paced replay; forwards with attempts
    await call('GET', '/v1/incidents/sample', { expect: 200 });
    const inc = await seedIncident(t.db, org.id, { n: 2 });
    await call('GET', '/v1/requests/{id}/forwards', { url: `/v1/requests/${inc.requestIds[0]}/forwards`, expect: 200 });
    await call('GET', '/v1/incidents', { expect: 200 });
    await call('GET', '/v1/incidents/sample', { expect: 200 });
    await call('GET', '/v1/incidents/recent', { expect: 200 });
    await call('PATCH', '/v1/incidents/{id}', { url: `/v1/incidents/${inc.incidentId}`, body: { status: 'investigating' }, expect: 200 });
    await call('POST', '/v1/incidents/{id}/updates', { url: `/v1/incidents/${inc.incidentId}/updates`, body: { body: 'Looking into it.' }, expect: 201 });
    await call('GET', '/v1/incidents/{id}', { url: `/v1/incidents/${inc.incidentId}`, expect: 200 });
    const batch = (await json('POST', '/v1/incidents/{id}/replay', { url: `/v1/incidents/${inc.incidentId}/replay`, body: { requests_per_minute: 60 }, expect: 200 })).data;
    await call('GET', '/v1/replay-batches/{id}', { url: `/v1/replay-batches/${batch.replay_batch_id}`, expect: 200 });
    await call('POST', '/v1/replay-batches/{id}/resume', { url: `/v1/replay-batches/${batch.replay_batch_id}/resume`, expect: 409 });
    await call('POST', '/v1/replay-batches/{id}/pause', { url: `/v1/replay-batches/${batch.replay_batch_id}/pause`, expect: 200 });
    await call('POST', '/v1/replay-batches/{id}/pause', { url: `/v1/replay-batches/${batch.replay_batch_id}/pause`, expect: 409 });
    await call('POST', '/v1/replay-batches/{id}/resume', { url: `/v1/replay-batches/${batch.replay_batch_id}/resume`, expect: 200 });
    await call('POST', '/v1/replay-batches/{id}/cancel', { url: `/v1/replay-batches/${batch.replay_batch_id}/cancel`, expect: 200 });

    // the operator API
    const org2 = (await json('POST', '/admin/v1/organizations', { body: { name: 'Globex', plan: 'pro' }, expect: 201 })).data;
    const orgUrl = `/admin/v1/organizations/${org2.id}`;
    await call('GET', '/admin/v1/organizations', { expect: 200 });
    await call('GET', '/admin/v1/organizations/{id}', { url: orgUrl, expect: 200 });
    await call('PATCH', '/admin/v1/organizations/{id}', { url: orgUrl, body: { plan: 'business' }, expect: 200 });
    const opMember = (await json('POST', '/admin/v1/organizations/{id}/members', { url: `${orgUrl}/members`, body: { email: 'ops@example.com', role: 'super_admin', password: 'correct horse battery' }, expect: 201 })).data;
    await call('POST', '/admin/v1/organizations/{id}/members', { url: `${orgUrl}/members`, body: { email: 'ops@example.com', role: 'admin' }, expect: 409 });
    await call('GET', '/admin/v1/organizations/{id}/members', { url: `${orgUrl}/members`, expect: 200 });
    const opKey = (await json('POST', '/admin/v1/members/{id}/api-keys', { url: `/admin/v1/members/${opMember.id}/api-keys`, body: { name: 'billing' }, expect: 201 })).data;
    await call('GET', '/admin/v1/members/{id}/api-keys', { url: `/admin/v1/members/${opMember.id}/api-keys`, expect: 200 });
    await call('DELETE', '/admin/v1/api-keys/{id}', { url: `/admin/v1/api-keys/${opKey.id}`, expect: 204 });
    await call('POST', '/admin/v1/organizations/{id}/agents', { url: `${orgUrl}/agents`, body: { name: 'ci-runner', environment: 'production' }, expect: 201 });
    await call('PATCH', '/admin/v1/members/{id}', { url: `/admin/v1/members/${opMember.id}`, body: { role: 'admin' }, expect: 409 });
    await call('POST', '/admin/v1/organizations/{id}/members', { url: `${orgUrl}/members`, body: { email: 'ops2@example.com', role: 'viewer' }, expect: 201 });
    const viewers = (await json('GET', '/admin/v1/organizations/{id}/members', { url: `${orgUrl}/members` })).data.data.filter((m: any) => m.role === 'viewer');
    await call('PATCH', '/admin/v1/members/{id}', { url: `/admin/v1/members/${viewers[0].id}`, body: { active: false }, expect: 200 });
    await call('GET', '/admin/v1/organizations/{id}/audit-log', { url: `${orgUrl}/audit-log`, expect: 200 });

    // last: deletions of what the walk used
    await call('DELETE', '/v1/agents/{id}', { url: `/v1/agents/${agent.id}`, expect: 204 });
    await call('DELETE', '/v1/endpoints/{id}', { url: `/v1/endpoints/${ep.id}`, expect: 204 });

    const missing = operations.filter((o) => !Object.keys(o.op.responses).some((s) => s.startsWith('2') && seen.get(`${o.method} ${o.path}`)?.has(Number(s))));
    assert.deepEqual(
      missing.map((o) => `${o.method} ${o.path}`),
      [],
      'every operation was seen answering a documented success: teach this walk to call a new route',
    );
    for (const o of operations) {
      const success = Object.keys(o.op.responses).filter((s) => s.startsWith('2'));
      assert.ok(success.length >= 1, `${o.method} ${o.path} documents its success answer`);
    }
  });

  it('every operation answers bad input, a key without the scope and an oversized body as documented', async () => {
    const narrow = (await seedOrg(t.db, { scopes: ['usage:read'] })).key;
    const narrowOther = (await seedOrg(t.db, { scopes: ['endpoints:read'] })).key;
    const huge = JSON.stringify({ name: 'x'.repeat(1024 * 1024 + 10) });
    let probes = 0;
    for (const { path, method, op } of operations) {
      const url = path.replace(/\{\w+\}/g, UNKNOWN_ID);
      const auth = op['x-weir-auth'];
      const hasQuery = (op.parameters ?? []).some((p: any) => p.in === 'query' && p.name === 'limit');
      const hasBody = Boolean(op.requestBody);
      if (hasQuery) {
        await call(method, path, { url: `${url}?limit=0`, expect: 400 });
        probes++;
      }
      if (hasBody) {
        await call(method, path, { url, raw: '[1]', expect: 400 });
        await call(method, path, { url, raw: huge, expect: 413 });
        probes += 2;
      }
      if (auth && !auth.anyKey && !auth.operator) {
        const token = (auth.scopes ?? []).includes('usage:read') ? narrowOther : narrow;
        await call(method, path, { url, token, ...(hasBody ? { body: {} } : {}), expect: 403 });
        probes++;
      }
    }
    assert.ok(probes >= 60, `${probes} error answers checked`);
  });
});

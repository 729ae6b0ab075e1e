import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Ajv } from 'ajv';
import type { FastifyInstance, RouteOptions } from 'fastify';
import pino from 'pino';
import { Authenticator } from '../../src/auth/authenticate.ts';
import { buildApp } from '../../src/http/app.ts';
import type { RouteModule } from '../../src/http/deps.ts';
import { routeModules } from '../../src/routes.ts';
import { ADMIN_TOKEN, seedOrg, testConfig } from '../helpers/app.ts';
import { openTestDb, type TestDb } from '../helpers/db.ts';

const UNKNOWN_ID = '00000000-0000-7000-8000-000000000000';

/**
 * The OpenAPI document against the real app: every route is in it with its
 * auth, and the app's real error answers validate against what it documents,
 * so the document cannot drift from the code without this failing. Success
 * answers and the other errors: openapi-answers.test.ts.
 */
describe('OpenAPI document', () => {
  let t: TestDb;
  let app: FastifyInstance;
  let authenticator: Authenticator;
  let doc: any;
  const routes: RouteOptions[] = [];
  // registered first in each tree: sees every route added after it, in that tree and its children
  const collect: RouteModule = (instance) => void instance.addHook('onRoute', (r) => void routes.push(r));

  before(async () => {
    t = await openTestDb();
    authenticator = new Authenticator(t.db);
    await authenticator.start();
    app = await buildApp(
      { db: t.db, config: testConfig(), authenticator, logger: pino({ level: 'silent' }), urls: { publicUrl: 'http://api.test', ingestUrl: 'http://ingest.test' } },
      { v1: [collect, ...routeModules.v1], root: [collect, ...routeModules.root] },
    );
    await app.ready();
    const res = await app.inject({ method: 'GET', url: '/v1/openapi.json' });
    assert.equal(res.statusCode, 200, 'served without a key');
    doc = res.json();
  });
  after(async () => {
    await app?.close();
    await authenticator?.stop();
    await t?.close();
  });

  const operations = () =>
    Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ path, method: method.toUpperCase(), op })));
  const toOpenApiPath = (url: string) => url.replace(/:(\w+)/g, '{$1}');

  it('is OpenAPI 3.1 and lists every /v1 and /admin/v1 route with its auth and error answers', () => {
    assert.equal(doc.openapi, '3.1.0');
    const api = routes.filter((r) => /^\/(admin\/)?v1\//.test(r.url) && r.url !== '/v1/openapi.json' && r.method !== 'HEAD');
    assert.ok(api.length >= 30, `${api.length} routes`);
    for (const r of api) {
      for (const method of [r.method].flat()) {
        const op = doc.paths[toOpenApiPath(r.url)]?.[method.toLowerCase()];
        assert.ok(op, `${method} ${r.url} is documented`);
        assert.equal(op.security.length, 1, `${method} ${r.url} says how to authenticate`);
        const auth = (r.config as { auth?: unknown } | undefined)?.auth;
        if (r.url.startsWith('/v1/')) assert.deepEqual(op['x-weir-auth'], auth ?? null, `${method} ${r.url} documents its scopes and permission`);
        for (const status of ['400', '401', '403', '404']) assert.ok(op.responses[status]?.content?.['application/json']?.schema, `${method} ${r.url} documents ${status}`);
      }
    }
    assert.ok(doc.paths['/v1/endpoints/{id}/requests/stream'].get.description.includes('`requests:read`'));
  });

  it('every route answers an unauthenticated call as it documents', async () => {
    const ajv = new Ajv({ strict: false });
    for (const { path, method, op } of operations()) {
      const url = path.replace(/\{\w+\}/g, UNKNOWN_ID);
      const res = await app.inject({ method: method as never, url, ...(method === 'GET' || method === 'DELETE' ? {} : { payload: {} }) });
      assert.equal(res.statusCode, 401, `${method} ${path}`);
      const schema = op.responses['401'].content['application/json'].schema;
      assert.ok(ajv.validate(schema, res.json()), `${method} ${path}: ${ajv.errorsText()}`);
    }
  });

  it("every route with an id answers an unknown id with a documented status and body", async () => {
    const { key } = await seedOrg(t.db);
    const ajv = new Ajv({ strict: false });
    let checked = 0;
    for (const { path, method, op } of operations()) {
      if (!path.includes('{')) continue;
      const url = path.replace(/\{\w+\}/g, UNKNOWN_ID);
      const token = path.startsWith('/admin/') ? ADMIN_TOKEN : key;
      const res = await app.inject({ method: method as never, url, headers: { authorization: `Bearer ${token}` }, ...(method === 'GET' || method === 'DELETE' ? {} : { payload: {} }) });
      const documented = op.responses[String(res.statusCode)]?.content?.['application/json']?.schema;
      assert.ok(documented, `${method} ${path} answered ${res.statusCode}, which it does not document`);
      assert.ok(ajv.validate(documented, res.json()), `${method} ${path} ${res.statusCode}: ${ajv.errorsText()}`);
      checked++;
    }
    assert.ok(checked >= 20, `${checked} routes checked`);
  });

  it('serves the reference page', async () => {
    const res = await app.inject({ method: 'GET', url: '/reference/' });
    assert.equal(res.statusCode, 200);
    assert.match(res.headers['content-type'] as string, /^text\/html/);
  });
});

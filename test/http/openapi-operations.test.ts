import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { PERMISSIONS } from '../../src/auth/permissions.ts';
import { OPERATIONS } from '../../src/http/operations.ts';
import { EVENT_TYPES } from '../../src/subscriptions/event-types.ts';
import { useTestApp } from '../helpers/app.ts';

/**
 * The document as a product (issue 30): every operation is named, summarised
 * and tagged, the names are unique and in one style, the description says
 * who may call it (from the routes' own auth), every JSON body and JSON
 * success answer has an example and every example fits its schema,
 * `servers` is the public URL, and every event type is a webhook.
 */
describe('OpenAPI operations', () => {
  const t = useTestApp({}, { reset: false });
  let doc: any;
  before(async () => {
    const res = await t.app.inject({ method: 'GET', url: '/v1/openapi.json' });
    assert.equal(res.statusCode, 200);
    doc = res.json();
  });

  const operations = () =>
    Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ key: `${method.toUpperCase()} ${path}`, op })));

  it('names, summarises and tags every operation, with unique ids in one style', () => {
    const tagNames = new Set((doc.tags as { name: string }[]).map((tag) => tag.name));
    const ids = new Map<string, string>();
    const ops = operations();
    assert.ok(ops.length >= 60, `${ops.length} operations`);
    for (const { key, op } of ops) {
      assert.match(op.operationId ?? '', /^[a-z][a-zA-Z]+$/, `${key} has a lowerCamelCase operationId (add it to src/http/operations.ts)`);
      assert.ok(!ids.has(op.operationId), `${key} and ${ids.get(op.operationId)} share the id ${op.operationId}`);
      ids.set(op.operationId, key);
      assert.ok(typeof op.summary === 'string' && op.summary.length > 3 && !op.summary.endsWith('.'), `${key} has a one-line summary`);
      assert.ok(op.tags?.length === 1 && tagNames.has(op.tags[0]), `${key} has a declared tag, got ${op.tags}`);
      assert.ok(op.description, `${key} has a description`);
    }
    for (const [key, info] of Object.entries(OPERATIONS)) {
      const found = ops.find((o) => o.key === key);
      assert.ok(found, `src/http/operations.ts names ${key}, which is not a route`);
      if (info.responseExample !== undefined) {
        const success = Object.entries(found.op.responses as Record<string, any>).find(([status]) => status.startsWith('2'))?.[1];
        assert.deepEqual(success?.content?.['application/json']?.example, info.responseExample, `${key} shows its response example`);
      }
    }
  });

  it("describes each /v1 operation's scopes and role permission from the route's own auth", () => {
    for (const { key, op } of operations()) {
      if (key.includes(' /admin/')) {
        assert.match(op.description, /^Operator API\./, key);
        continue;
      }
      const auth = op['x-weir-auth'];
      assert.ok(auth, `${key} declares its auth`);
      for (const scope of auth.scopes ?? []) assert.ok(op.description.includes(`\`${scope}\``), `${key} names the scope ${scope}`);
      if (auth.permission) {
        const roles = PERMISSIONS[auth.permission as keyof typeof PERMISSIONS].join(', ');
        assert.ok(op.description.includes(`\`${auth.permission}\` (held by ${roles})`), `${key} names ${auth.permission} and its roles: ${op.description}`);
      } else if (!auth.anyKey) assert.ok(op.description.includes('No role permission'), `${key} says no role permission is needed`);
    }
  });

  it('has a request example for every JSON body, and every example fits its schema', () => {
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    let checked = 0;
    for (const { key, op } of operations()) {
      const json = op.requestBody?.content?.['application/json'];
      if (json) {
        assert.ok(json.example !== undefined, `${key} has a request example`);
        assert.ok(ajv.validate(json.schema, json.example), `${key} request example: ${ajv.errorsText()}`);
        checked++;
      }
      for (const [status, res] of Object.entries(op.responses as Record<string, any>)) {
        const media = res.content?.['application/json'];
        for (const example of [media?.schema?.example, media?.example].filter((e) => e !== undefined)) {
          assert.ok(ajv.validate({ ...media.schema, example: undefined }, example), `${key} ${status} example: ${ajv.errorsText()}`);
          checked++;
        }
      }
    }
    assert.ok(checked > 40, `${checked} examples checked`);
  });

  it('has an example for every JSON success answer, and each fits its schema', () => {
    // Where a reader (Swagger UI, Redocly, a generator) finds one: on the answer, or on the resource
    // it carries, through the envelope (`data`, a page's `data.data` items, an event sample's `object`, anyOf branches).
    const carried = (schema: any, at: string): Array<{ schema: any; at: string }> => {
      if (!schema || typeof schema !== 'object') return [];
      if (schema.example !== undefined) return [{ schema, at }];
      return [
        ...(schema.anyOf ?? []).flatMap((s: any, i: number) => carried(s, `${at}.anyOf[${i}]`)),
        ...carried(schema.items, `${at}[]`),
        ...['data', 'object'].flatMap((key) => carried(schema.properties?.[key], `${at}.${key}`)),
      ];
    };
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    let checked = 0;
    for (const { key, op } of operations()) {
      const [status, success] = Object.entries(op.responses as Record<string, any>).find(([s]) => s.startsWith('2')) ?? [];
      const media = success?.content?.['application/json'];
      if (!media) continue;
      const found = media.example !== undefined ? [{ schema: media.schema, at: 'answer' }] : carried(media.schema, 'answer');
      assert.ok(found.length > 0, `${key} ${status} has no example: add a responseExample in src/http/operations.ts (or an example on the resource's schema)`);
      for (const { schema, at } of found) {
        const example = at === 'answer' && media.example !== undefined ? media.example : schema.example;
        assert.ok(ajv.validate({ ...schema, example: undefined }, example), `${key} ${status} example at ${at}: ${ajv.errorsText()}`);
      }
      checked++;
    }
    assert.ok(checked >= 55, `${checked} success answers checked`);
  });

  it('names the public URL as its server', () => {
    assert.deepEqual(
      doc.servers.map((s: { url: string }) => s.url),
      ['http://api.test'],
    );
  });

  it('describes every event type as a webhook with the Standard Webhooks headers', () => {
    assert.deepEqual(Object.keys(doc.webhooks).sort(), [...EVENT_TYPES].sort());
    const ids = new Set(operations().map((o) => o.op.operationId));
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    for (const type of EVENT_TYPES) {
      const op = doc.webhooks[type].post;
      assert.ok(op.operationId && !ids.has(op.operationId), `${type} has its own id`);
      ids.add(op.operationId);
      assert.ok(op.summary, type);
      const headers = op.parameters.filter((p: any) => p.in === 'header' && p.required).map((p: any) => p.name);
      for (const h of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) assert.ok(headers.includes(h), `${type} documents ${h}`);
      const media = op.requestBody.content['application/json'];
      assert.ok(ajv.validate(media.schema, media.example), `${type} example: ${ajv.errorsText()}`);
      assert.ok(!ajv.validate(media.schema, { ...media.example, type: type === 'incident.opened' ? 'incident.resolved' : 'incident.opened' }), `${type} schema pins the type`);
    }
  });
});

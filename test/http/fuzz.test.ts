import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Ajv } from 'ajv';
import fc from 'fast-check';
import type { Role, Scope } from '../../src/auth/permissions.ts';
import { ROLES } from '../../src/auth/permissions.ts';
import { ADMIN_TOKEN, addMemberWithKey, call, seedOrg, useTestApp } from '../helpers/app.ts';
import { insertCaptures } from '../helpers/fixtures.ts';
import { seedIncident } from '../incidents/helpers.ts';

/**
 * The fuzz test (issue 23): every operation /v1/openapi.json documents is
 * called with requests built from its own documented schemas, then broken
 * (NUL, lone surrogates, 10,000-character strings, bad numbers, far-past and
 * far-future UUIDs and timestamps, unknown fields, wrong types, empty bodies,
 * deep nesting), by every kind of key. Every answer must be below 500, a
 * status the document lists for the operation, in the error envelope when an
 * error, and valid against the documented response schema.
 *
 * The route list is read from the document at run time, so a new route is
 * fuzzed the day it is documented. Runs per operation: WEIR_FUZZ_RUNS
 * (default 12, about half a minute on a 2-core machine); a failure prints
 * fast-check's seed and path, and WEIR_FUZZ_SEED=<seed> replays the run.
 */

const RUNS = Number(process.env.WEIR_FUZZ_RUNS ?? 12);
const SEED = process.env.WEIR_FUZZ_SEED === undefined ? undefined : Number(process.env.WEIR_FUZZ_SEED);

const FAR_FUTURE_UUID = 'ffffffff-ffff-ffff-ffff-ffffffffffff';
const FAR_PAST_UUID = '00000000-0000-0000-0000-000000000000';
const UUID_RE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** Values that break a field: each must be refused cleanly, never a 500. */
function nastyValues(): unknown[] {
  let deepObject: unknown = 'x';
  for (let i = 0; i < 200; i++) deepObject = { a: deepObject };
  let deepArray: unknown = 1;
  for (let i = 0; i < 2000; i++) deepArray = [deepArray];
  return [
    '\u0000',
    'a\u0000b',
    'lone \ud800 high',
    'lone \udfff low',
    'x'.repeat(10_000),
    'é'.repeat(10_000),
    '',
    ' ',
    -1,
    0,
    0.5,
    -0.0001,
    1e308,
    -1e308,
    2 ** 53 + 1,
    2 ** 31,
    'NaN',
    '1e999',
    '12abc',
    FAR_FUTURE_UUID,
    FAR_PAST_UUID,
    'ffffffff-ffff-7fff-bfff-ffffffffffff',
    '0000-01-01T00:00:00Z',
    '9999-12-31T23:59:59Z',
    '+275760-09-13T00:00:00.000Z',
    '1969-12-31T23:59:59Z',
    'https://user:pw@example.com/x',
    'http://127.0.0.1:1/x',
    'https://[::1]/x',
    true,
    null,
    [],
    {},
    [null],
    deepObject,
    deepArray,
  ];
}

/** Query and path text that breaks a parameter: raw, already URL-encoded. */
const NASTY_TEXT = [
  '%00',
  'a%00b',
  '%ED%A0%80', // a lone surrogate in UTF-8 form: invalid UTF-8
  '%FF',
  'x'.repeat(10_000),
  '-1',
  '0',
  '0.5',
  '1e309',
  'NaN',
  '',
  FAR_FUTURE_UUID,
  FAR_PAST_UUID,
  '0000-01-01T00:00:00Z',
  '9999-12-31T23:59:59Z',
  '%2B275760-09-13T00:00:00.000Z',
  '..%2F..%2Fetc',
  '%E2%80%AE',
];

interface Operation {
  method: string;
  path: string;
  op: any;
}

interface World {
  /** Ids by the collection a path parameter names: `endpoints`, `requests`, ... */
  ids: Record<string, string[]>;
  /** Every id known, for fields the collection of which the walk cannot tell. */
  all: string[];
  /** Bearer tokens: one full and one narrowed key per role, the operator's, and bad ones. */
  tokens: { name: string; token: string | undefined }[];
}

const t = useTestApp({}, { reset: false });

/** The organization and resources the fuzzed requests reach with real ids. */
async function buildWorld(): Promise<World> {
  const top = await seedOrg(t.db, { plan: 'business' });
  const orgId = top.org.id;
  const key = top.key;
  const post = async (url: string, body: unknown) => {
    const res = await call(t.app, 'POST', url, { key, body });
    assert.ok(res.status < 300, `${url}: ${res.status} ${JSON.stringify(res.json)}`);
    return res.json.data;
  };
  const ep = await post('/v1/endpoints', { name: 'fuzz', forward_url: 'https://example.com/hook' });
  const captures = await insertCaptures(t.db, { id: ep.id, organization_id: orgId }, [{ body: '{"a":1}' }, { body: 'x' }]);
  const agent = await post('/v1/agents', { name: 'fuzz-agent' });
  const saved = await post('/v1/destinations', { name: 'fuzz-dest', url: 'https://example.com/d', endpoint_id: ep.id });
  const sub = await post('/v1/subscriptions', { target_url: 'https://example.com/s', event_types: ['request.captured'] });
  const inc = await seedIncident(t.db, orgId, { n: 2 });
  const batch = (await call(t.app, 'POST', `/v1/incidents/${inc.incidentId}/replay`, { key, body: { requests_per_minute: 60 } })).json?.data;
  // A member and a key of their own for the routes that change members and keys: the keys the
  // fuzz acts with must survive whatever a fuzzed DELETE or PATCH does.
  const victim = await addMemberWithKey(t.db, orgId, 'developer');
  const other = await seedOrg(t.db, { plan: 'free' });

  const tokens: World['tokens'] = [
    { name: 'no key', token: undefined },
    { name: 'malformed key', token: 'wr_live_us_nope' },
    { name: 'operator', token: ADMIN_TOKEN },
    { name: 'super_admin', token: key },
  ];
  const narrow: Record<Role, Scope[]> = {
    super_admin: ['members:invite', 'usage:read'],
    admin: ['endpoints:read', 'endpoints:write', 'destinations:write'],
    developer: ['requests:read', 'requests:replay', 'incidents:write'],
    viewer: ['subscriptions:read', 'incidents:read'],
  };
  for (const role of ROLES) {
    if (role !== 'super_admin') tokens.push({ name: role, token: (await addMemberWithKey(t.db, orgId, role)).key });
    tokens.push({ name: `${role} narrowed`, token: (await addMemberWithKey(t.db, orgId, role, narrow[role])).key });
  }
  const ids: Record<string, string[]> = {
    endpoints: [ep.id],
    requests: [...captures.map((c) => c.id), ...inc.requestIds],
    destinations: [saved.id, saved.forward_destination_id].filter(Boolean),
    destination_id: [saved.forward_destination_id, inc.destinationId].filter(Boolean),
    endpointId: [ep.id],
    agents: [agent.id],
    subscriptions: [sub.id],
    incidents: [inc.incidentId],
    'replay-batches': batch?.replay_batch_id ? [batch.replay_batch_id] : [],
    members: [victim.memberId],
    'api-keys': [victim.keyId],
    organizations: [other.org.id],
  };
  return { ids, all: Object.values(ids).flat(), tokens };
}

/** The real ids a path parameter may take: by its name, else by the collection segment before it. */
function idsFor(world: World, path: string, param: string): string[] {
  if (world.ids[param]?.length) return world.ids[param];
  const segments = path.split('/');
  const at = segments.indexOf(`{${param}}`);
  return world.ids[segments[at - 1]] ?? world.all;
}

/** A generator of values valid under a (documented) JSON schema, with realistic strings where a name says what they are. */
function fromSchema(schema: any, world: World, name = '', depth = 0): fc.Arbitrary<unknown> {
  if (!schema || typeof schema !== 'object' || depth > 6) return fc.constant('x');
  if (schema.enum) return fc.constantFrom(...schema.enum);
  if (schema.const !== undefined) return fc.constant(schema.const);
  const alternatives = schema.oneOf ?? schema.anyOf;
  if (alternatives) return fc.oneof(...alternatives.map((s: any) => fromSchema(s, world, name, depth + 1)));
  if (Array.isArray(schema.type)) return fc.oneof(...schema.type.map((type: string) => fromSchema({ ...schema, type }, world, name, depth)));
  const type = schema.type ?? (schema.properties ? 'object' : undefined);
  switch (type) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer': {
      const min = schema.minimum ?? -5;
      return fc.integer({ min, max: Math.max(min, schema.maximum ?? Math.max(min, 10_000)) });
    }
    case 'number':
      return fc.double({ min: schema.minimum ?? -1000, max: schema.maximum ?? 1000, noNaN: true });
    case 'string':
      return stringFor(schema, world, name);
    case 'array':
      return fc.array(fromSchema(schema.items, world, name, depth + 1), { minLength: schema.minItems ?? 0, maxLength: Math.min(schema.maxItems ?? 3, 3) });
    case 'object': {
      const props: Record<string, any> = schema.properties ?? {};
      if (Object.keys(props).length === 0) return fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 }), { maxKeys: 3 });
      const record = Object.fromEntries(Object.entries(props).map(([k, s]) => [k, fromSchema(s, world, k, depth + 1)]));
      return fc.record(record, { requiredKeys: (schema.required ?? []).filter((k: string) => k in props) });
    }
    default:
      return fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean());
  }
}

function stringFor(schema: any, world: World, name: string): fc.Arbitrary<string> {
  const maxLength = Math.min(schema.maxLength ?? 40, 40);
  const minLength = Math.min(schema.minLength ?? 0, maxLength);
  if (schema.format === 'uuid' || (schema.pattern && UUID_RE.test('00000000-0000-0000-0000-000000000000') && schema.pattern.includes('{12}')) || /(^|_)id$/.test(name)) {
    return fc.constantFrom(...world.all, FAR_FUTURE_UUID, FAR_PAST_UUID);
  }
  if (schema.format === 'date-time' || /_at$|^since$|^until$/.test(name)) {
    return fc.date({ min: new Date('2020-01-01T00:00:00Z'), max: new Date('2040-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString());
  }
  if (/url$/.test(name)) return fc.constantFrom('https://example.com/hook', 'https://hooks.example.org/a?b=1', 'https://example.com/');
  if (/email/.test(name)) return fc.emailAddress().filter((e) => e.length <= maxLength + 40);
  if (schema.pattern) return fc.stringMatching(new RegExp(schema.pattern)).filter((s) => s.length >= minLength && s.length <= (schema.maxLength ?? Infinity));
  return fc.string({ minLength, maxLength: Math.max(minLength, maxLength) });
}

/** Every leaf path of a JSON value (with the root, for a value that is not an object). */
function pathsOf(v: unknown, at: (string | number)[] = []): (string | number)[][] {
  if (v === null || typeof v !== 'object') return [at];
  const entries: [string | number, unknown][] = Array.isArray(v) ? v.map((x, i) => [i, x]) : Object.entries(v);
  return [at, ...entries.flatMap(([k, x]) => pathsOf(x, [...at, k]))];
}

function replaceAt(v: unknown, path: (string | number)[], value: unknown): unknown {
  if (path.length === 0) return value;
  const copy: any = Array.isArray(v) ? [...v] : { ...(v as object) };
  copy[path[0]] = replaceAt(copy[path[0]], path.slice(1), value);
  return copy;
}

type Mutation =
  | { kind: 'none' }
  | { kind: 'leaf'; pick: number; value: unknown }
  | { kind: 'unknown-field'; value: unknown }
  | { kind: 'raw-body'; raw: string }
  | { kind: 'query'; pick: number; text: string }
  | { kind: 'path'; text: string };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { arbitrary: fc.constant({ kind: 'none' as const }), weight: 3 },
  { arbitrary: fc.record({ kind: fc.constant('leaf' as const), pick: fc.nat(), value: fc.constantFrom(...nastyValues()) }), weight: 5 },
  { arbitrary: fc.record({ kind: fc.constant('unknown-field' as const), value: fc.constantFrom(...nastyValues()) }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('raw-body' as const), raw: fc.constantFrom('', '{', '[1]', '"x"', '123', 'null', '{"a":', '\u0000', '{"name":"\\u0000"}') }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('query' as const), pick: fc.nat(), text: fc.constantFrom(...NASTY_TEXT) }), weight: 3 },
  // never empty in a path: /x/ is another route (the list), not a broken id
  { arbitrary: fc.record({ kind: fc.constant('path' as const), text: fc.constantFrom(...NASTY_TEXT.filter((s) => s !== '')) }), weight: 1 },
);

const ajv = new Ajv({ strict: false, formats: { uuid: /^[0-9a-f-]{36}$/i, 'date-time': (s: string) => !Number.isNaN(Date.parse(s)), binary: true } });
const validators = new Map<object, ReturnType<typeof ajv.compile>>();
function validate(schema: object, body: unknown): string | undefined {
  let v = validators.get(schema);
  if (!v) validators.set(schema, (v = ajv.compile(schema)));
  return v(body) ? undefined : ajv.errorsText(v.errors);
}

/** What one answer must be, whatever was sent: the failure as a sentence, or undefined. */
function answerProblem(o: Operation, status: number, contentType: string, text: string): string | undefined {
  if (status >= 500) return `a ${status}`;
  const documented = o.op.responses[String(status)];
  if (!documented) return `status ${status} is not documented`;
  const media = documented.content && Object.keys(documented.content)[0];
  if (status === 204 || !media) return text === '' ? undefined : 'a body where the document has none';
  if (media !== 'application/json') return undefined; // the captured body: its own content-type
  if (!contentType.startsWith('application/json')) return `content-type ${contentType}`;
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    return 'a body that is not JSON';
  }
  if (status >= 400) {
    const keys = Object.keys(body ?? {});
    if (keys.length !== 1 || keys[0] !== 'error' || typeof body.error?.code !== 'string' || typeof body.error?.message !== 'string' || Object.keys(body.error).length !== 2) {
      return 'an error outside the {error: {code, message}} envelope';
    }
  }
  const problem = validate(documented.content[media].schema, body);
  return problem ? `a body the documented schema refuses: ${problem}` : undefined;
}

describe('fuzzing every documented operation', () => {
  let world: World;
  let operations: Operation[] = [];

  it('builds the world and reads the document', async () => {
    world = await buildWorld();
    const doc = (await t.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json();
    operations = Object.entries(doc.paths as Record<string, Record<string, any>>)
      .flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ path, method: method.toUpperCase(), op })))
      // an event stream never ends by itself: test/requests covers it over a socket
      .filter((o) => !Object.values(o.op.responses as Record<string, any>).some((r) => r.content?.['text/event-stream']));
    assert.ok(operations.length >= 60, `${operations.length} operations`);
  });

  it(`answers every broken request cleanly (${RUNS} runs per operation)`, { timeout: 20 * 60_000 }, async (ctx) => {
    const t_diagnostic = (m: string) => ctx.diagnostic(m);
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    for (const o of operations) {
      const params: any[] = o.op.parameters ?? [];
      const pathParams = params.filter((p) => p.in === 'path');
      const queryParams = params.filter((p) => p.in === 'query');
      const bodySchema = o.op.requestBody?.content?.['application/json']?.schema;
      const admin = o.path.startsWith('/admin/');
      const tokens = world.tokens.filter((k) => (admin ? k.name === 'operator' || k.name === 'no key' || k.name === 'super_admin' : k.name !== 'operator'));

      const request = fc.record({
        // mostly a key that may do everything, so the broken input reaches the route's own checks
        token: fc.oneof({ arbitrary: fc.constantFrom(...tokens.filter((k) => k.name === (admin ? 'operator' : 'super_admin'))), weight: 3 }, { arbitrary: fc.constantFrom(...tokens), weight: 1 }),
        path: fc.record(Object.fromEntries(pathParams.map((p) => [p.name, fc.constantFrom(...idsFor(world, o.path, p.name), FAR_FUTURE_UUID)]))),
        query: fc.record(
          Object.fromEntries(queryParams.map((p) => [p.name, fromSchema(p.schema, world, p.name).map((v) => (v === undefined ? undefined : String(v)))])),
          { requiredKeys: [] },
        ),
        body: bodySchema ? fromSchema(bodySchema, world) : fc.constant(undefined),
        mutation,
      });

      const property = fc.asyncProperty(request, async ({ token, path, query, body, mutation: m }) => {
        let url = o.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(String((path as Record<string, string>)[name])));
        const q = Object.entries(query as Record<string, string | undefined>)
          .filter(([, v]) => v !== undefined)
          .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v as string)}`);
        let payload: string | undefined = body === undefined ? undefined : JSON.stringify(body);
        if (m.kind === 'leaf' && body !== undefined) {
          const paths = pathsOf(body);
          payload = JSON.stringify(replaceAt(body, paths[m.pick % paths.length], m.value));
        } else if (m.kind === 'unknown-field' && body !== undefined && typeof body === 'object' && !Array.isArray(body)) {
          payload = JSON.stringify({ ...body, surely_not_a_field: m.value });
        } else if (m.kind === 'raw-body') {
          payload = m.raw;
        } else if (m.kind === 'query') {
          const names = queryParams.map((p) => p.name);
          q.push(`${names.length ? names[m.pick % names.length] : 'surely_not_a_parameter'}=${m.text}`);
        } else if (m.kind === 'path' && pathParams.length) {
          url = o.path.replace(/\{(\w+)\}/g, m.text);
        }
        const fullUrl = q.length ? `${url}?${q.join('&')}` : url;
        const res = await t.app.inject({
          method: o.method as never,
          url: fullUrl,
          headers: {
            ...(token.token ? { authorization: `Bearer ${token.token}` } : {}),
            ...(payload !== undefined ? { 'content-type': 'application/json' } : {}),
          },
          payload,
        });
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
        const problem = answerProblem(o, res.statusCode, String(res.headers['content-type'] ?? ''), res.body);
        if (problem) {
          throw new Error(`${o.method} ${fullUrl.slice(0, 300)} as ${token.name} with ${String(payload).slice(0, 300)} answered ${res.statusCode} ${res.body.slice(0, 300)}: ${problem}`);
        }
      });
      const out = await fc.check(property, { numRuns: RUNS, seed: SEED, endOnFailure: true });
      if (out.failed) failures.push(`${o.method} ${o.path} (seed ${out.seed}, path ${out.counterexamplePath}): ${(out.errorInstance as Error)?.message ?? String(out.errorInstance)}`);
    }
    const seen = Object.fromEntries([...statuses].sort(([a], [b]) => a - b));
    t_diagnostic(`answers by status: ${JSON.stringify(seen)}`);
    assert.deepEqual(failures, []);
    // the world is reached, not only refused at the door
    assert.ok([200, 201, 202, 204].some((s) => (statuses.get(s) ?? 0) > 0) && (statuses.get(400) ?? 0) > 0, JSON.stringify(seen));
  });
});

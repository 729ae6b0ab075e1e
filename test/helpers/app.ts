import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { after, before, beforeEach } from 'node:test';
import pino from 'pino';
import { createApiKey } from '../../src/auth/api-keys.ts';
import { Authenticator } from '../../src/auth/authenticate.ts';
import type { Role, Scope } from '../../src/auth/permissions.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import type { Db } from '../../src/db/db.ts';
import { buildApp } from '../../src/http/app.ts';
import { createMember } from '../../src/orgs/members.ts';
import { createOrganization, type Organization } from '../../src/orgs/organizations.ts';
import type { PlanName } from '../../src/orgs/plans.ts';
import { routeModules } from '../../src/routes.ts';
import { openTestDb, type TestDb } from './db.ts';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';

export function testConfig(overrides: Partial<Config> = {}): Config {
  return { ...loadConfig({ WEIR_ADMIN_TOKEN: ADMIN_TOKEN, WEIR_LOG_LEVEL: 'silent' }), ...overrides };
}

export interface TestApp {
  app: FastifyInstance;
  authenticator: Authenticator;
  config: Config;
  close(): Promise<void>;
}

/** The real API app (all route modules) on the given database, driven with inject(). */
export async function buildTestApp(db: Db, overrides: Partial<Config> = {}): Promise<TestApp> {
  const config = testConfig(overrides);
  const authenticator = new Authenticator(db);
  await authenticator.start();
  const logger = pino({ level: 'silent' });
  const app = await buildApp(
    { db, config, authenticator, logger, urls: { publicUrl: 'http://api.test', ingestUrl: 'http://ingest.test' } },
    routeModules,
  );
  await app.ready();
  return {
    app,
    authenticator,
    config,
    async close() {
      await app.close();
      await authenticator.stop();
    },
  };
}

export interface UsedTestApp {
  /** The file's database (its url, reset() and close()). */
  readonly testDb: TestDb;
  readonly db: Db;
  readonly app: FastifyInstance;
  readonly authenticator: Authenticator;
  readonly config: Config;
}

/**
 * One database and one API app for the enclosing file or describe(): registers
 * before (open the database, build the app), beforeEach (reset the database,
 * unless `reset: false`) and after (close the app, then the database). The
 * returned object's properties are valid once `before` has run.
 */
export function useTestApp(overrides: Partial<Config> = {}, opts: { reset?: boolean } = {}): UsedTestApp {
  let testDb: TestDb | undefined;
  let api: TestApp | undefined;
  const ready = () => {
    if (!testDb || !api) throw new Error('useTestApp(): used before its before() hook ran');
    return { testDb, api };
  };
  before(async () => {
    testDb = await openTestDb();
    api = await buildTestApp(testDb.db, overrides);
  });
  if (opts.reset ?? true) beforeEach(() => ready().testDb.reset());
  after(async () => {
    await api?.close();
    await testDb?.close();
  });
  return {
    get testDb() {
      return ready().testDb;
    },
    get db() {
      return ready().testDb.db;
    },
    get app() {
      return ready().api.app;
    },
    get authenticator() {
      return ready().api.authenticator;
    },
    get config() {
      return ready().api.config;
    },
  };
}

export interface Seeded {
  org: Organization;
  memberId: string;
  keyId: string;
  key: string;
}

/** An organization with one member of `role` holding one key (full access unless scopes are given). */
export async function seedOrg(db: Db, opts: { plan?: PlanName; role?: Role; scopes?: Scope[]; region?: string; email?: string } = {}): Promise<Seeded> {
  const org = await createOrganization(db, { name: 'Acme', plan: opts.plan ?? 'starter', region: opts.region ?? 'us' });
  const member = await addMemberWithKey(db, org.id, opts.role ?? 'super_admin', opts.scopes, opts.email);
  return { org, ...member };
}

export async function addMemberWithKey(db: Db, orgId: string, role: Role, scopes?: Scope[], email?: string): Promise<Omit<Seeded, 'org'>> {
  const m = await createMember(db, { organizationId: orgId, email: email ?? `${role}-${Math.random().toString(36).slice(2)}@example.com`, role }, { type: 'system' });
  if (!m.ok) throw new Error('member');
  const k = await createApiKey(db, { memberId: m.member.id, name: 'test', accessMode: scopes ? 'custom' : 'full', scopes: scopes ?? [] }, { type: 'system' });
  if (!k.ok) throw new Error(k.reason === 'invalid' ? k.message : k.reason);
  return { memberId: m.member.id, keyId: k.apiKey.id, key: k.key };
}

/** inject() with a bearer key and a JSON body; returns status and parsed JSON. */
export async function call(
  app: FastifyInstance,
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT',
  url: string,
  opts: { key?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; json: any; res: LightMyRequestResponse }> {
  const res = await app.inject({
    method,
    url,
    headers: {
      ...(opts.key ? { authorization: `Bearer ${opts.key}` } : {}),
      ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...opts.headers,
    },
    payload: opts.body === undefined ? undefined : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body),
  });
  let json: any;
  try {
    json = res.json();
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, json, res };
}

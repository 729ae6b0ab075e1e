import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../http/deps.ts';
import { badRequest, forbidden, notFound } from '../http/errors.ts';
import { pageQuerySchema, toPage } from '../http/paging.ts';
import { idParams, pathId, uuidSchema } from '../http/schemas.ts';
import { createApiKey, getApiKey, listApiKeys, revokeApiKey, updateApiKey, type KeyPatch } from './api-keys.ts';
import { listAudit } from './audit.ts';
import { authResponses as R } from './responses.ts';
import { keyAccessSchema, keyCreateSchema, parseExpiry, presentApiKey, type KeyCreateBody } from './present.ts';
import { PERMISSIONS, roleHas, type AccessMode, type Permission } from './permissions.ts';

const VERSION = '0.1.0';

/** GET /v1/me, GET /v1/health, key management for members (/v1/api-keys) and the audit log. */
export function authRoutes(app: FastifyInstance, { db, config, authenticator }: AppDeps): void {
  app.get('/me', { config: { auth: { anyKey: true } }, schema: { response: R.me } }, async (request) => {
    const a = request.auth;
    return {
      data: {
        organization: { id: a.organizationId, name: a.organizationName, plan: a.plan, region: a.region, limits: config.plans[a.plan] },
        member: { id: a.memberId, email: a.memberEmail, role: a.memberRole },
        // effective_role is what the permissions below come from: the owner's live role, lowered to
        // the creator's when another member minted the key.
        api_key: { id: a.keyId, name: a.keyName, access_mode: a.accessMode, scopes: a.scopes, expires_at: a.expiresAt, effective_role: a.role },
        permissions: (Object.keys(PERMISSIONS) as Permission[]).filter((p) => roleHas(a.role, p)),
      },
    };
  });

  app.get('/health', { config: { auth: { anyKey: true } }, schema: { response: R.health } }, async (_request, reply) => {
    const started = performance.now();
    const ok = await db.query('select 1').then(
      () => true,
      () => false,
    );
    const body = {
      data: {
        status: ok ? 'ok' : 'degraded',
        version: VERSION,
        database: { kind: db.kind, reachable: ok, latency_ms: Math.round((performance.now() - started) * 100) / 100 },
        notifications: db.listening() ? 'connected' : 'reconnecting',
      },
    };
    return reply.status(ok ? 200 : 503).send(body);
  });

  // Key management. The specification leaves these to the dashboard; the
  // dashboard is a client of this API, so they live here. Custom-scope keys
  // cannot manage keys at all: a narrowed key must not be able to mint a wider one.
  app.get('/api-keys', { config: { auth: { fullAccessOnly: true, permission: 'api_keys.manage_own' } }, schema: { response: R.keys } }, async (request) => {
    const a = request.auth;
    const all = roleHas(a.role, 'api_keys.manage');
    const keys = await listApiKeys(db, { organizationId: a.organizationId, memberId: all ? undefined : a.memberId });
    return { data: { data: keys.map(presentApiKey) } };
  });

  app.post<{ Body: KeyCreateBody & { member_id?: string } }>(
    '/api-keys',
    {
      config: { auth: { fullAccessOnly: true, permission: 'api_keys.manage_own' } },
      schema: { body: { ...keyCreateSchema, properties: { ...keyCreateSchema.properties, member_id: uuidSchema } }, response: R.keyCreated },
    },
    async (request, reply) => {
      const a = request.auth;
      const body = request.body;
      const memberId = body.member_id?.toLowerCase() ?? a.memberId;
      if (memberId !== a.memberId && !roleHas(a.role, 'api_keys.manage')) {
        throw forbidden(`Creating keys for other members needs the permission api_keys.manage (role ${a.role} lacks it).`);
      }
      const expiresAt = parseExpiry(body.expires_at);
      if (expiresAt === 'invalid') throw badRequest('Field "expires_at" must be an ISO 8601 timestamp with a time zone.');
      const result = await db.transaction((tx) =>
        createApiKey(
          tx,
          { memberId, name: body.name, accessMode: body.access_mode ?? 'full', scopes: body.scopes ?? [], expiresAt },
          { type: 'member', memberId: a.memberId },
          { organizationId: a.organizationId, actorRole: a.role },
        ),
      );
      if (!result.ok) {
        if (result.reason === 'member_not_found') throw notFound(`Member ${memberId} not found.`);
        if (result.reason === 'escalation') throw forbidden(result.message);
        throw badRequest(result.message);
      }
      return reply.status(201).send({ data: { ...presentApiKey(result.apiKey), key: result.key } });
    },
  );

  // Editing a key passes the rules creating it would (src/auth/grants.ts): an
  // admin cannot widen, narrow or extend a super_admin's key.
  app.patch<{ Params: { id: string }; Body: { access_mode?: AccessMode; scopes?: string[]; expires_at?: string | null } }>(
    '/api-keys/:id',
    {
      config: { auth: { fullAccessOnly: true, permission: 'api_keys.manage' } },
      schema: {
        params: idParams,
        body: {
          type: 'object',
          additionalProperties: false,
          minProperties: 1,
          properties: { ...keyAccessSchema, expires_at: keyCreateSchema.properties.expires_at },
        },
        response: R.keyUpdated,
      },
    },
    async (request) => {
      const id = pathId(request.params.id, 'API key');
      const a = request.auth;
      const body = request.body;
      // (not a schema `dependencies`: OpenAPI 3.1 has no such keyword, and the document must lint)
      if (body.scopes !== undefined && body.access_mode === undefined) throw badRequest('Field "scopes" needs "access_mode": "custom" beside it.');
      const expiresAt = parseExpiry(body.expires_at);
      if (expiresAt === 'invalid') throw badRequest('Field "expires_at" must be an ISO 8601 timestamp with a time zone.');
      const patch: KeyPatch = {
        ...(body.access_mode ? { access: { accessMode: body.access_mode, scopes: body.scopes ?? [] } } : {}),
        // null (or a timestamp) is a change; an absent field is not
        ...('expires_at' in body ? { expiresAt: expiresAt ?? null } : {}),
      };
      const result = await authenticator.commitChange((tx) =>
        updateApiKey(tx, id, patch, { type: 'member', memberId: a.memberId }, { organizationId: a.organizationId, actorRole: a.role }),
      );
      if (!result.ok) {
        if (result.reason === 'not_found') throw notFound(`API key ${id} not found or revoked.`);
        if (result.reason === 'escalation') throw forbidden(result.message);
        throw badRequest(result.message);
      }
      return { data: presentApiKey(result.apiKey) };
    },
  );

  app.delete<{ Params: { id: string } }>(
    '/api-keys/:id',
    { config: { auth: { fullAccessOnly: true, permission: 'api_keys.manage_own' } }, schema: { params: idParams, response: R.keyRevoked } },
    async (request, reply) => {
      const id = pathId(request.params.id, 'API key');
      const a = request.auth;
      const key = await getApiKey(db, id, a.organizationId);
      if (!key) throw notFound(`API key ${id} not found.`);
      if (key.member_id !== a.memberId && !roleHas(a.role, 'api_keys.manage')) {
        throw forbidden(`Revoking other members' keys needs the permission api_keys.manage (role ${a.role} lacks it).`);
      }
      await authenticator.commitChange((tx) => revokeApiKey(tx, id, { type: 'member', memberId: a.memberId }, a.organizationId));
      return reply.status(204).send();
    },
  );

  // The organization's audit log: key creation and revocation, member and role changes.
  app.get<{ Querystring: { limit: number; before?: string } }>(
    '/audit-log',
    {
      config: { auth: { fullAccessOnly: true, permission: 'audit_log.view' } },
      schema: { querystring: { type: 'object', additionalProperties: false, properties: pageQuerySchema }, response: R.audit },
    },
    async (request) => {
      const { limit, before } = request.query;
      return { data: toPage(await listAudit(db, request.auth.organizationId, limit + 1, before), limit) };
    },
  );
}

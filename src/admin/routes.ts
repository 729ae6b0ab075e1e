import type { FastifyInstance } from 'fastify';
import { AGENT_ENVIRONMENTS, AGENT_NAME_MAX, enrollAgent, type AgentEnvironment } from '../agents/agents.ts';
import { createApiKey, listApiKeys, revokeApiKey } from '../auth/api-keys.ts';
import { listAudit } from '../auth/audit.ts';
import { adminTokenMatches } from '../auth/operator-token.ts';
import type { Role } from '../auth/permissions.ts';
import { keyCreateSchema, parseExpiry, presentApiKey, type KeyCreateBody } from '../auth/present.ts';
import type { AppDeps } from '../http/deps.ts';
import { badRequest, conflict, notFound, planLimit, unauthorized } from '../http/errors.ts';
import { pageQuerySchema, toPage } from '../http/paging.ts';
import { idParams, pathId } from '../http/schemas.ts';
import { createMember, getMember, listMembers, updateMember } from '../orgs/members.ts';
import { createOrganization, getOrganization, listOrganizations, updateOrganization } from '../orgs/organizations.ts';
import { PLAN_NAMES, type PlanName } from '../orgs/plans.ts';
import { memberInviteSchema, memberPatchSchema, presentMember, presentOrganization } from '../orgs/present.ts';
import { checkedEmail, memberOrThrow } from '../orgs/routes.ts';
import { adminResponses as R } from './responses.ts';

const OPERATOR = { type: 'operator' } as const;

/**
 * The operator API (/admin/v1): what a SaaS operator or billing system owns.
 * When WEIR_ADMIN_TOKEN is unset the whole tree answers 404, as if absent.
 */
export function adminRoutes(root: FastifyInstance, deps: AppDeps): void {
  const { db, config, authenticator } = deps;
  root.register(
    async (app) => {
      app.addHook('onRequest', async (request) => {
        if (!config.adminToken) throw notFound(`No route ${request.method} ${request.url.split('?')[0]}.`);
        if (!adminTokenMatches(request.headers.authorization, config.adminToken)) throw unauthorized('A valid operator token is required: send Authorization: Bearer <WEIR_ADMIN_TOKEN>.');
      });

      /** The id of an organization that exists, from a path parameter (400 when malformed, 404 when unknown). */
      const existingOrganization = async (param: string): Promise<string> => {
        const orgId = pathId(param, 'Organization');
        if (!(await getOrganization(db, orgId))) throw notFound(`Organization ${orgId} not found.`);
        return orgId;
      };

      app.post<{ Body: { name: string; plan?: PlanName; region?: string } }>(
        '/organizations',
        {
          schema: {
            body: {
              type: 'object',
              additionalProperties: false,
              required: ['name'],
              properties: {
                name: { type: 'string', minLength: 1, maxLength: 100 },
                plan: { type: 'string', enum: PLAN_NAMES },
                region: { type: 'string', pattern: '^[a-z0-9]{2,16}$' },
              },
            },
            response: R.organizationCreated,
          },
        },
        async (request, reply) => {
          const { name, plan = 'free', region = config.region } = request.body;
          const org = await createOrganization(db, { name, plan, region });
          return reply.status(201).send({ data: presentOrganization(org) });
        },
      );

      app.get<{ Querystring: { limit: number; before?: string } }>(
        '/organizations',
        { schema: { querystring: { type: 'object', additionalProperties: false, properties: pageQuerySchema }, response: R.organizations } },
        async (request) => {
          const { limit, before } = request.query;
          const rows = await listOrganizations(db, limit + 1, before);
          return { data: toPage(rows, limit, presentOrganization) };
        },
      );

      app.get<{ Params: { id: string } }>('/organizations/:id', { schema: { params: idParams, response: R.organization } }, async (request) => {
        const org = await getOrganization(db, pathId(request.params.id, 'Organization'));
        if (!org) throw notFound(`Organization ${request.params.id} not found.`);
        return { data: { ...presentOrganization(org), limits: config.plans[org.plan] } };
      });

      app.patch<{ Params: { id: string }; Body: { plan?: PlanName; name?: string } }>(
        '/organizations/:id',
        {
          schema: {
            params: idParams,
            body: {
              type: 'object',
              additionalProperties: false,
              minProperties: 1,
              properties: { plan: { type: 'string', enum: PLAN_NAMES }, name: { type: 'string', minLength: 1, maxLength: 100 } },
            },
            response: R.organizationUpdated,
          },
        },
        async (request) => {
          // The plan is part of every cached auth context: flush them with the change.
          const org = await authenticator.commitChange((tx) => updateOrganization(tx, pathId(request.params.id, 'Organization'), request.body));
          if (!org) throw notFound(`Organization ${request.params.id} not found.`);
          return { data: presentOrganization(org) };
        },
      );

      app.get<{ Params: { id: string }; Querystring: { limit: number; before?: string } }>(
        '/organizations/:id/audit-log',
        { schema: { params: idParams, querystring: { type: 'object', additionalProperties: false, properties: pageQuerySchema }, response: R.audit } },
        async (request) => {
          const orgId = await existingOrganization(request.params.id);
          const { limit, before } = request.query;
          return { data: toPage(await listAudit(db, orgId, limit + 1, before), limit) };
        },
      );

      app.post<{ Params: { id: string }; Body: { email: string; role: Role; password?: string } }>(
        '/organizations/:id/members',
        {
          schema: {
            params: idParams,
            body: {
              ...memberInviteSchema,
              properties: { ...memberInviteSchema.properties, password: { type: 'string', minLength: 12, maxLength: 1024 } },
            },
            response: R.memberCreated,
          },
        },
        async (request, reply) => {
          const orgId = pathId(request.params.id, 'Organization');
          const email = checkedEmail(request.body.email);
          if (!(await getOrganization(db, orgId))) throw notFound(`Organization ${orgId} not found.`);
          const { role, password } = request.body;
          const result = await db.transaction((tx) => createMember(tx, { organizationId: orgId, email, role, password }, OPERATOR));
          if (!result.ok) throw conflict(`A member with email ${request.body.email} already exists in this organization.`);
          return reply.status(201).send({ data: presentMember(result.member) });
        },
      );

      app.get<{ Params: { id: string }; Querystring: { limit: number; before?: string } }>(
        '/organizations/:id/members',
        { schema: { params: idParams, querystring: { type: 'object', additionalProperties: false, properties: pageQuerySchema }, response: R.members } },
        async (request) => {
          const orgId = await existingOrganization(request.params.id);
          const { limit, before } = request.query;
          return { data: toPage(await listMembers(db, orgId, limit + 1, before), limit, presentMember) };
        },
      );

      app.patch<{ Params: { id: string }; Body: { role?: Role; active?: boolean } }>(
        '/members/:id',
        {
          schema: { params: idParams, body: memberPatchSchema, response: R.memberUpdated },
        },
        async (request) => {
          const id = pathId(request.params.id, 'Member');
          const result = await authenticator.commitChange((tx) => updateMember(tx, id, request.body, OPERATOR));
          return { data: presentMember(memberOrThrow(result, id)) };
        },
      );

      app.post<{ Params: { id: string }; Body: KeyCreateBody }>(
        '/members/:id/api-keys',
        { schema: { params: idParams, body: keyCreateSchema, response: R.keyCreated } },
        async (request, reply) => {
          const memberId = pathId(request.params.id, 'Member');
          const body = request.body;
          const expiresAt = parseExpiry(body.expires_at);
          if (expiresAt === 'invalid') throw badRequest('Field "expires_at" must be an ISO 8601 timestamp with a time zone.');
          const result = await db.transaction((tx) =>
            createApiKey(tx, { memberId, name: body.name, accessMode: body.access_mode ?? 'full', scopes: body.scopes ?? [], expiresAt }, OPERATOR),
          );
          if (!result.ok) {
            if (result.reason === 'member_not_found') throw notFound(`Member ${memberId} not found.`);
            throw badRequest(result.message);
          }
          return reply.status(201).send({ data: { ...presentApiKey(result.apiKey), key: result.key } });
        },
      );

      app.get<{ Params: { id: string } }>('/members/:id/api-keys', { schema: { params: idParams, response: R.keys } }, async (request) => {
        const member = await getMember(db, pathId(request.params.id, 'Member'));
        if (!member) throw notFound(`Member ${request.params.id} not found.`);
        const keys = await listApiKeys(db, { organizationId: member.organization_id, memberId: member.id });
        return { data: { data: keys.map(presentApiKey) } };
      });

      app.delete<{ Params: { id: string } }>('/api-keys/:id', { schema: { params: idParams, response: R.keyRevoked } }, async (request, reply) => {
        const key = await authenticator.commitChange((tx) => revokeApiKey(tx, pathId(request.params.id, 'API key'), OPERATOR));
        if (!key) throw notFound(`API key ${request.params.id} not found.`);
        return reply.status(204).send();
      });

      // The token is what `weir agent --token` connects with: shown here once, stored only as a hash.
      // environment defaults to development, the one that never retries and is outside the plan's cap.
      app.post<{ Params: { id: string }; Body: { name: string; environment?: AgentEnvironment } }>(
        '/organizations/:id/agents',
        {
          schema: {
            params: idParams,
            body: {
              type: 'object',
              additionalProperties: false,
              required: ['name'],
              properties: { name: { type: 'string', minLength: 1, maxLength: AGENT_NAME_MAX }, environment: { type: 'string', enum: AGENT_ENVIRONMENTS } },
            },
            response: R.agentEnrolled,
          },
        },
        async (request, reply) => {
          const orgId = pathId(request.params.id, 'Organization');
          const { name, environment = 'development' } = request.body;
          const result = await enrollAgent(db, { organizationId: orgId, name, environment, createdBy: null }, config.plans);
          if (!result.ok) {
            if (result.reason === 'organization_not_found') throw notFound(`Organization ${orgId} not found.`);
            if (result.reason === 'plan_limit') throw planLimit(result.message);
            throw badRequest(result.message);
          }
          const { agent, token } = result;
          return reply.status(201).send({
            data: { id: agent.id, organization_id: agent.organization_id, name: agent.name, environment: agent.environment, created_at: agent.created_at, token },
          });
        },
      );
    },
    { prefix: '/admin/v1' },
  );
}


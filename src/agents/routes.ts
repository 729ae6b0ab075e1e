import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Actor } from '../auth/audit.ts';
import type { AppDeps } from '../http/deps.ts';
import { badRequest, conflict, notFound, planLimit } from '../http/errors.ts';
import { pageQuerySchema, toPage } from '../http/paging.ts';
import { idParams, pathId } from '../http/schemas.ts';
import { AGENT_ENVIRONMENTS, AGENT_NAME_MAX, enrollAgent, getAgent, listAgents, type Agent, type AgentEnvironment } from './agents.ts';
import { reissueAgentToken, revokeAgent, updateAgent, type ManageResult } from './manage.ts';
import { AGENT_PATH } from './protocol.ts';
import { agentResponses as R } from './responses.ts';

/**
 * Members' view of their organization's agents. The specification's scope
 * table is closed and names no agent scope, so reading rides on
 * destinations:read (agents are destination targets) and managing on
 * destinations:write; the role permissions agents.view and agents.manage
 * decide who may (managing is for admins: an agent is a credential).
 */
const READ = { scopes: ['destinations:read'], permission: 'agents.view' } as const;
const MANAGE = { scopes: ['destinations:write'], permission: 'agents.manage' } as const;

const nameSchema = { type: 'string', minLength: 1, maxLength: AGENT_NAME_MAX } as const;
const environmentSchema = { type: 'string', enum: AGENT_ENVIRONMENTS } as const;

/** The agent object of the API: presence comes from the row, so any node answers it. */
export function presentAgent(a: Agent) {
  return {
    id: a.id,
    name: a.name,
    environment: a.environment,
    status: a.connected ? 'connected' : 'disconnected',
    connected_at: a.connected ? a.connected_at : null,
    last_seen_at: a.last_seen_at,
    agent_version: a.agent_version,
    hostname: a.hostname,
    node: a.connected ? a.connected_node : null,
    revoked_at: a.revoked_at,
    created_at: a.created_at,
    updated_at: a.updated_at,
  };
}

const actorOf = (request: FastifyRequest): Actor => ({ type: 'member', memberId: request.auth.memberId });

function orFail(result: ManageResult, id: string) {
  if (result.ok) return result;
  switch (result.reason) {
    case 'not_found':
      throw notFound(`Agent ${id} not found.`);
    case 'revoked':
      throw conflict(`Agent ${id} is revoked; enroll a new one.`);
    case 'plan_limit':
      throw planLimit(result.message);
    default:
      throw badRequest(result.message);
  }
}

/** /v1/agents: list, get, enroll, rename or re-environment, re-issue the token, revoke. */
export function agentRoutes(app: FastifyInstance, { db, config, urls }: AppDeps): void {
  /** The command that connects an agent, with this node's public base URL. */
  const command = (token: string) => `npx weir agent --server ${urls.publicUrl} --token ${token}`;

  app.get<{ Querystring: { limit: number; before?: string; include_revoked?: boolean } }>(
    '/agents',
    {
      config: { auth: READ },
      schema: { querystring: { type: 'object', additionalProperties: false, properties: { ...pageQuerySchema, include_revoked: { type: 'boolean', default: false } } }, response: R.page },
    },
    async (request) => {
      const { limit, before, include_revoked } = request.query;
      const rows = await listAgents(db, request.auth.organizationId, { limit: limit + 1, before, includeRevoked: include_revoked });
      return { data: toPage(rows, limit, presentAgent) };
    },
  );

  app.get<{ Params: { id: string } }>('/agents/:id', { config: { auth: READ }, schema: { params: idParams, response: R.one } }, async (request) => {
    const id = pathId(request.params.id, 'Agent');
    const agent = await getAgent(db, request.auth.organizationId, id);
    if (!agent) throw notFound(`Agent ${id} not found.`);
    return { data: presentAgent(agent) };
  });

  app.post<{ Body: { name: string; environment?: AgentEnvironment } }>(
    '/agents',
    {
      config: { auth: MANAGE },
      schema: { body: { type: 'object', additionalProperties: false, required: ['name'], properties: { name: nameSchema, environment: environmentSchema } }, response: R.enrolled },
    },
    async (request, reply) => {
      const { name, environment = 'development' } = request.body;
      const result = await enrollAgent(db, { organizationId: request.auth.organizationId, name, environment, createdBy: request.auth.memberId }, config.plans);
      if (!result.ok) {
        if (result.reason === 'plan_limit') throw planLimit(result.message);
        if (result.reason === 'organization_not_found') throw notFound('Organization not found.');
        throw badRequest(result.message);
      }
      const agent = (await getAgent(db, request.auth.organizationId, result.agent.id))!;
      return reply.status(201).send({ data: { ...presentAgent(agent), token: result.token, command: command(result.token), gateway_path: AGENT_PATH } });
    },
  );

  app.patch<{ Params: { id: string }; Body: { name?: string; environment?: AgentEnvironment } }>(
    '/agents/:id',
    {
      config: { auth: MANAGE },
      schema: {
        params: idParams,
        body: { type: 'object', additionalProperties: false, minProperties: 1, properties: { name: nameSchema, environment: environmentSchema } },
        response: R.updated,
      },
    },
    async (request) => {
      const id = pathId(request.params.id, 'Agent');
      if (!request.body || typeof request.body !== 'object') throw badRequest('The body must be a JSON object with name and/or environment.');
      const { agent } = orFail(await updateAgent(db, request.auth.organizationId, id, request.body, actorOf(request), config.plans), id);
      return { data: presentAgent(agent) };
    },
  );

  app.post<{ Params: { id: string } }>('/agents/:id/token', { config: { auth: MANAGE }, schema: { params: idParams, response: R.reissued } }, async (request) => {
    const id = pathId(request.params.id, 'Agent');
    const { agent, token } = orFail(await reissueAgentToken(db, request.auth.organizationId, id, actorOf(request)), id);
    return { data: { ...presentAgent(agent), token: token!, command: command(token!) } };
  });

  app.delete<{ Params: { id: string } }>('/agents/:id', { config: { auth: MANAGE }, schema: { params: idParams, response: R.revoked } }, async (request, reply) => {
    const id = pathId(request.params.id, 'Agent');
    orFail(await revokeAgent(db, request.auth.organizationId, id, actorOf(request)), id);
    return reply.status(204).send();
  });
}

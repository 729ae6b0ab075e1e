import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../http/deps.ts';
import { badRequest, notFound, planLimit } from '../http/errors.ts';
import { idParams, pathId } from '../http/schemas.ts';
import { endpointResponses as R } from './responses.ts';
import { presentIngestResponse } from './ingest-response.ts';
import type { EndpointFields } from './validate.ts';
import { presentVerification } from '../verification/settings.ts';
import { verificationSetting } from '../verification/schemas.ts';
import { deduplicationSetting } from '../routing/schemas.ts';
import { createEndpoint, deleteEndpoint, getEndpoint, listEndpoints, updateEndpoint, type Endpoint } from './endpoints.ts';

// Types only: lengths and the https:// rule are the domain's (endpoints.ts),
// so every caller gets the same rules and messages; NUL characters are
// refused for every route by src/http/input-guard.ts.
const nullableString = { type: ['string', 'null'] } as const;
// Shape only; statuses, header names, hop-by-hop headers and the 64 KB body
// limit are checked by the domain (ingest-response.ts), with messages.
const responseSetting = {
  type: ['object', 'null'],
  description: 'A custom ingest answer `{status, headers, body}` instead of 200 `{"request_id"}`; null restores the default (docs/endpoints.md).',
  properties: {
    status: { type: 'integer' },
    headers: { type: 'object', additionalProperties: { type: 'string' } },
    body: { type: 'string' },
  },
} as const;
const createBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: { name: { type: 'string' }, description: nullableString, forward_url: nullableString, response: responseSetting, verification: verificationSetting, deduplication: deduplicationSetting },
} as const;
const patchBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    name: { type: 'string' },
    description: nullableString,
    forward_url: nullableString,
    paused: { type: 'boolean' },
    response: responseSetting,
    verification: verificationSetting,
    deduplication: deduplicationSetting,
  },
} as const;

interface EndpointBody {
  name?: string;
  description?: string | null;
  forward_url?: string | null;
  paused?: boolean;
  response?: EndpointFields['response'];
  verification?: EndpointFields['verification'];
  deduplication?: unknown;
}

/** The Endpoint resource of the specification, plus its public ingestion URL. */
export function presentEndpoint(e: Endpoint, ingestUrl: string) {
  return {
    id: e.id,
    organization_id: e.organization_id,
    created_by: e.created_by,
    slug: e.slug,
    name: e.name,
    description: e.description,
    forward_url: e.forward_url,
    paused: e.paused,
    response: presentIngestResponse(e.response),
    verification: presentVerification(e),
    deduplication: e.deduplication ?? null,
    created_at: e.created_at,
    updated_at: e.updated_at,
    ingest_url: `${ingestUrl}/h/${e.slug}`,
  };
}

/**
 * /v1/endpoints. Scopes and role permissions (docs/endpoints.md): list needs
 * only endpoints:read, as the specification says; get adds endpoints.view;
 * create and edit need endpoints:write with endpoints.create / endpoints.edit;
 * delete needs endpoints:write with endpoints.delete (admins only).
 */
export function endpointRoutes(app: FastifyInstance, { db, config, urls }: AppDeps): void {
  const present = (e: Endpoint) => presentEndpoint(e, urls.ingestUrl);

  app.get('/endpoints', { config: { auth: { scopes: ['endpoints:read'] } }, schema: { response: R.list } }, async (request) => {
    const endpoints = await listEndpoints(db, request.auth.organizationId);
    return { data: endpoints.map(present) };
  });

  app.post<{ Body: EndpointBody & { name: string } }>(
    '/endpoints',
    { config: { auth: { scopes: ['endpoints:write'], permission: 'endpoints.create' } }, schema: { body: createBody, response: R.created } },
    async (request, reply) => {
      const { name, description, forward_url, response, verification, deduplication } = request.body;
      const a = request.auth;
      const result = await createEndpoint(db, config.plans, a.organizationId, { name, description, forwardUrl: forward_url, response, verification, deduplication, createdBy: a.memberId });
      if (!result.ok) {
        if (result.reason === 'invalid') throw badRequest(result.message);
        if (result.reason === 'plan_limit') throw planLimit(`The ${result.plan} plan allows ${result.limit} endpoints (paused ones count); delete one or upgrade the plan.`, 429);
        throw notFound('Organization not found.');
      }
      return reply.status(201).send({ data: present(result.endpoint) });
    },
  );

  app.get<{ Params: { id: string } }>(
    '/endpoints/:id',
    { config: { auth: { scopes: ['endpoints:read'], permission: 'endpoints.view' } }, schema: { params: idParams, response: R.one } },
    async (request) => {
      const id = pathId(request.params.id, 'Endpoint');
      const endpoint = await getEndpoint(db, request.auth.organizationId, id);
      if (!endpoint) throw notFound(`Endpoint ${id} not found.`);
      return { data: present(endpoint) };
    },
  );

  app.patch<{ Params: { id: string }; Body: EndpointBody }>(
    '/endpoints/:id',
    { config: { auth: { scopes: ['endpoints:write'], permission: 'endpoints.edit' } }, schema: { params: idParams, body: patchBody, response: R.updated } },
    async (request) => {
      const id = pathId(request.params.id, 'Endpoint');
      const { name, description, forward_url, paused, response, verification, deduplication } = request.body ?? {};
      const a = request.auth;
      const result = await updateEndpoint(db, a.organizationId, id, { name, description, forwardUrl: forward_url, paused, response, verification, deduplication }, a.memberId);
      if (!result.ok) {
        if (result.reason === 'invalid') throw badRequest(result.message);
        throw notFound(`Endpoint ${id} not found.`);
      }
      return { data: present(result.endpoint) };
    },
  );

  app.delete<{ Params: { id: string } }>(
    '/endpoints/:id',
    { config: { auth: { scopes: ['endpoints:write'], permission: 'endpoints.delete' } }, schema: { params: idParams, response: R.deleted } },
    async (request, reply) => {
      const id = pathId(request.params.id, 'Endpoint');
      const result = await deleteEndpoint(db, request.auth.organizationId, id, request.auth.memberId);
      if (!result.ok) throw notFound(`Endpoint ${id} not found.`);
      return reply.status(204).send();
    },
  );
}

import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../http/deps.ts';
import { badRequest, notFound } from '../http/errors.ts';
import { pageQuerySchema, toPage } from '../http/paging.ts';
import { idParams, pathId } from '../http/schemas.ts';
import { getEndpoint } from '../endpoints/endpoints.ts';
import { EVENT_TYPES } from './event-types.ts';
import { listSubscriptionEvents, presentEvent } from './event-log.ts';
import { captureSample } from './samples.ts';
import { createSubscription, deleteSubscription, getSubscription, listSubscriptions, presentSubscription, rotateSecret } from './subscriptions.ts';
import { subscriptionResponses as R } from './responses.ts';

// The specification: listing needs only the read scope (no role permission);
// creating and deleting need subscriptions:write, and a role that manages them.
const READ = { scopes: ['subscriptions:read'] } as const;
const WRITE = { scopes: ['subscriptions:write'], permission: 'subscriptions.manage' } as const;
// The sample: both scopes, scope only.
const SAMPLE = { scopes: ['subscriptions:read', 'requests:read'] } as const;

const createBody = {
  type: 'object',
  additionalProperties: false,
  required: ['target_url', 'event_types'],
  properties: {
    target_url: { type: 'string' },
    event_types: { type: 'array', items: { type: 'string' }, maxItems: EVENT_TYPES.length },
    endpoint_id: { type: ['string', 'null'] },
  },
} as const;
const listQuery = { type: 'object', additionalProperties: false, properties: { ...pageQuerySchema } } as const;
const sampleParams = { type: 'object', properties: { endpointId: { type: 'string' } }, required: ['endpointId'] } as const;

/** /v1/subscriptions: REST-hook subscriptions (docs/subscriptions.md). */
export function subscriptionRoutes(app: FastifyInstance, { db }: AppDeps): void {
  app.post<{ Body: { target_url: string; event_types: string[]; endpoint_id?: string | null } }>(
    '/subscriptions',
    { config: { auth: WRITE }, schema: { body: createBody, response: R.created } },
    async (request, reply) => {
      const b = request.body;
      const endpointId = b.endpoint_id ? pathId(b.endpoint_id, 'Endpoint') : null;
      const r = await createSubscription(db, {
        organizationId: request.auth.organizationId,
        targetUrl: b.target_url,
        eventTypes: b.event_types,
        endpointId,
        createdBy: request.auth.memberId,
      });
      if (!r.ok) throw r.reason === 'invalid' ? badRequest(r.message) : notFound(`Endpoint ${endpointId} not found.`);
      // the secret, once: it is never shown again (rotate-secret makes a new one)
      return reply.status(201).send({ data: { ...presentSubscription(r.subscription), secret: r.subscription.secret } });
    },
  );

  app.get<{ Querystring: { limit: number; before?: string } }>('/subscriptions', { config: { auth: READ }, schema: { querystring: listQuery, response: R.page } }, async (request) => {
    const { limit, before } = request.query;
    const rows = await listSubscriptions(db, request.auth.organizationId, { limit, before: before?.toLowerCase() });
    return { data: toPage(rows, limit, presentSubscription) };
  });

  app.get<{ Params: { endpointId: string } }>('/subscriptions/sample/:endpointId', { config: { auth: SAMPLE }, schema: { params: sampleParams, response: R.sample } }, async (request) => {
    const endpointId = pathId(request.params.endpointId, 'Endpoint');
    if (!(await getEndpoint(db, request.auth.organizationId, endpointId))) throw notFound(`Endpoint ${endpointId} not found.`);
    return { data: await captureSample(db, request.auth.organizationId, endpointId) };
  });

  app.get<{ Params: { id: string } }>('/subscriptions/:id', { config: { auth: READ }, schema: { params: idParams, response: R.one } }, async (request) => {
    const id = pathId(request.params.id, 'Subscription');
    const s = await getSubscription(db, request.auth.organizationId, id);
    if (!s) throw notFound(`Subscription ${id} not found.`);
    return { data: presentSubscription(s) };
  });

  app.get<{ Params: { id: string }; Querystring: { limit: number; before?: string } }>(
    '/subscriptions/:id/events',
    { config: { auth: READ }, schema: { params: idParams, querystring: listQuery, response: R.events } },
    async (request) => {
      const id = pathId(request.params.id, 'Subscription');
      if (!(await getSubscription(db, request.auth.organizationId, id))) throw notFound(`Subscription ${id} not found.`);
      const { limit, before } = request.query;
      const rows = await listSubscriptionEvents(db, id, { limit, before: before?.toLowerCase() });
      return { data: toPage(rows, limit, presentEvent) };
    },
  );

  app.delete<{ Params: { id: string } }>('/subscriptions/:id', { config: { auth: WRITE }, schema: { params: idParams, response: R.deleted } }, async (request, reply) => {
    const id = pathId(request.params.id, 'Subscription');
    if (!(await deleteSubscription(db, request.auth.organizationId, id))) throw notFound(`Subscription ${id} not found.`);
    return reply.status(204).send();
  });

  app.post<{ Params: { id: string } }>('/subscriptions/:id/rotate-secret', { config: { auth: WRITE }, schema: { params: idParams, response: R.rotated } }, async (request) => {
    const id = pathId(request.params.id, 'Subscription');
    const s = await rotateSecret(db, request.auth.organizationId, id);
    if (!s) throw notFound(`Subscription ${id} not found.`);
    return { data: { ...presentSubscription(s), secret: s.secret } };
  });
}

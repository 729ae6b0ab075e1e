import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../http/deps.ts';
import { badRequest, notFound } from '../http/errors.ts';
import { pageQuerySchema, toPage } from '../http/paging.ts';
import { idParams, pathId, uuidSchema } from '../http/schemas.ts';
import { listForwards } from './forwards.ts';
import { replayRequest } from './replay.ts';
import { deliveryResponses as R } from './responses.ts';

const replayBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    destination_id: uuidSchema,
    ignore_filter: { type: 'boolean', description: "true: send even to destinations whose current filter the request does not match (docs/routing.md). Default false: the filter applies." },
  },
} as const;

/** POST /v1/requests/:id/replay and GET /v1/requests/:id/forwards. */
export function deliveryRoutes(app: FastifyInstance, { db }: AppDeps): void {
  app.post<{ Params: { id: string }; Body: { destination_id?: string; ignore_filter?: boolean } | undefined }>(
    '/requests/:id/replay',
    {
      config: { auth: { scopes: ['requests:replay'], permission: 'requests.replay' } },
      // the body is optional: no body (or {}) replays to every enabled destination
      schema: { params: idParams, body: { anyOf: [{ type: 'null' }, replayBody] }, response: R.replayed },
      preValidation: async (request) => {
        if (request.body === undefined) request.body = null as never;
      },
    },
    async (request, reply) => {
      const requestId = pathId(request.params.id, 'Request');
      const destinationId = request.body?.destination_id?.toLowerCase();
      const r = await replayRequest(db, { organizationId: request.auth.organizationId, requestId, destinationId, ignoreFilter: request.body?.ignore_filter });
      if (!r.ok) {
        switch (r.reason) {
          case 'request_not_found':
            throw notFound(`Request ${requestId} not found.`);
          case 'destination_not_found':
            throw notFound(`Destination ${destinationId} is not a forward destination of this request's endpoint.`);
          case 'destination_disabled':
            throw badRequest(`Destination ${destinationId} is disabled; enable it to replay to it.`);
          case 'no_destinations':
            throw badRequest("This request's endpoint has no forward_url and no enabled forward destination to replay to.");
        }
      }
      return reply.status(202).send({
        data: {
          replay_batch_id: r.replayBatchId,
          request_id: r.requestId,
          queued_count: r.deliveries.length,
          deliveries: r.deliveries.map((d) => ({
            id: d.id,
            destination_id: d.destinationId,
            destination_type: d.destinationType,
            url: d.url,
            status: 'pending',
          })),
        },
      });
    },
  );

  app.get<{ Params: { id: string }; Querystring: { limit: number; before?: string } }>(
    '/requests/:id/forwards',
    {
      config: { auth: { scopes: ['requests:read'], permission: 'requests.view' } },
      schema: { params: idParams, querystring: { type: 'object', properties: pageQuerySchema }, response: R.forwards },
    },
    async (request) => {
      const requestId = pathId(request.params.id, 'Request');
      const { limit, before } = request.query;
      const r = await listForwards(db, { organizationId: request.auth.organizationId, requestId, limit, before: before?.toLowerCase() });
      if (!r.ok) throw notFound(`Request ${requestId} not found.`);
      return { data: toPage(r.forwards, limit) };
    },
  );
}

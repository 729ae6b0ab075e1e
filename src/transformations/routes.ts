import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/db.ts';
import type { AppDeps } from '../http/deps.ts';
import { badRequest, notFound } from '../http/errors.ts';
import { pathId, uuidSchema } from '../http/schemas.ts';
import { getCapture } from '../requests/captures.ts';
import { transformationResponses as R } from './responses.ts';
import { testTransformation } from './test-run.ts';
import { transformationProblem } from './check.ts';
import { sentRequestOf } from './sent.ts';

const READ = { scopes: ['requests:read'], permission: 'requests.view' } as const;

const testBody = {
  type: 'object',
  additionalProperties: false,
  required: ['code'],
  properties: {
    code: { type: 'string' },
    destination_id: { ...uuidSchema, description: "Given to the handler as context.destination_id; the capture is not sent anywhere." },
  },
} as const;

const sentParams = {
  type: 'object',
  properties: { id: { type: 'string' }, delivery_id: { type: 'string' } },
  required: ['id', 'delivery_id'],
} as const;

/** POST /v1/requests/:id/transform-test and GET /v1/requests/:id/forwards/:delivery_id/transformed (docs/transformations.md). */
export function transformationRoutes(app: FastifyInstance, { db, config }: AppDeps): void {
  app.post<{ Params: { id: string }; Body: { code: string; destination_id?: string } }>(
    '/requests/:id/transform-test',
    { config: { auth: READ }, schema: { params: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] }, body: testBody, response: R.tested } },
    async (request) => {
      const requestId = pathId(request.params.id, 'Request');
      const problem = await transformationProblem({ code: request.body.code });
      if (problem) throw badRequest(problem);
      const capture = await getCapture(db, request.auth.organizationId, requestId);
      if (!capture) throw notFound(`Request ${requestId} not found.`);
      const r = await testTransformation(capture, request.body.code, request.body.destination_id?.toLowerCase() ?? null, config);
      if (!r.ok) throw badRequest(r.message);
      return { data: { request: r.request, logs: r.logs, duration_ms: r.durationMs } };
    },
  );

  app.get<{ Params: { id: string; delivery_id: string } }>(
    '/requests/:id/forwards/:delivery_id/transformed',
    { config: { auth: READ }, schema: { params: sentParams, response: R.sent } },
    async (request) => {
      const requestId = pathId(request.params.id, 'Request');
      const deliveryId = pathId(request.params.delivery_id, 'Delivery');
      const sent = await sentRequestOf(db as Db, request.auth.organizationId, requestId, deliveryId);
      if (!sent) throw notFound(`Delivery ${deliveryId} of request ${requestId} has no transformed attempt.`);
      return { data: sent };
    },
  );
}

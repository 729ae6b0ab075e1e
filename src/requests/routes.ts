import type { FastifyInstance } from 'fastify';
import { CAPTURE_DELIVERY_STATES, deliverySummaries, type CaptureDeliveryState } from '../delivery/summary.ts';
import { getEndpoint } from '../endpoints/endpoints.ts';
import type { AppDeps } from '../http/deps.ts';
import { badRequest, notFound } from '../http/errors.ts';
import { pageQuerySchema, toPage } from '../http/paging.ts';
import { idParams, pathId } from '../http/schemas.ts';
import { getCapture, listCapturesWithDelivery } from './captures.ts';
import { presentCapture, presentCaptureSummary } from './present.ts';
import { captureBodyResponse, capturePageResponse, captureResponse } from './schemas.ts';

const READ = { scopes: ['requests:read'], permission: 'requests.view' } as const;

const listQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ...pageQuerySchema,
    method: { type: 'string', pattern: '^[A-Za-z]+(,[A-Za-z]+)*$', maxLength: 200 },
    since: { type: 'string' },
    until: { type: 'string' },
    q: { type: 'string', minLength: 1, maxLength: 200 },
    delivery_status: { type: 'string', enum: [...CAPTURE_DELIVERY_STATES], description: "Only captures whose delivery summary has this status (delivery.status)." },
    verification: { type: 'string', enum: ['verified', 'failed'], description: 'Only captures whose signature verification had this status (verification.status).' },
    duplicate: { type: 'string', enum: ['true', 'false'], description: 'true: only duplicates (duplicate_of set, not forwarded); false: only captures that are not duplicates (docs/routing.md).' },
  },
} as const;

interface ListQuery {
  limit: number;
  before?: string;
  method?: string;
  since?: string;
  until?: string;
  q?: string;
  delivery_status?: CaptureDeliveryState;
  verification?: 'verified' | 'failed';
  duplicate?: 'true' | 'false';
}

const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})$/;

function timestamp(value: string | undefined, name: string): Date | undefined {
  if (value === undefined) return undefined;
  const d = new Date(value);
  if (!ISO_TIMESTAMP.test(value) || Number.isNaN(d.getTime())) throw badRequest(`Query parameter "${name}" must be an ISO 8601 timestamp with a time zone, e.g. 2024-05-01T12:00:00Z.`);
  return d;
}

/**
 * Captured requests (scope requests:read, permission requests.view): the
 * list of an endpoint's captures, one capture, and its exact body bytes.
 */
export function requestRoutes(app: FastifyInstance, { db }: AppDeps): void {
  app.get<{ Params: { id: string }; Querystring: ListQuery }>(
    '/endpoints/:id/requests',
    { config: { auth: READ }, schema: { params: idParams, querystring: listQuery, response: capturePageResponse } },
    async (request) => {
      const orgId = request.auth.organizationId;
      const endpointId = pathId(request.params.id, 'Endpoint');
      const q = request.query;
      const since = timestamp(q.since, 'since');
      const until = timestamp(q.until, 'until');
      if (!(await getEndpoint(db, orgId, endpointId))) throw notFound(`Endpoint ${endpointId} not found.`);
      const rows = await listCapturesWithDelivery(db, orgId, endpointId, {
        limit: q.limit,
        before: q.before?.toLowerCase(),
        methods: q.method?.toUpperCase().split(','),
        since,
        until,
        q: q.q,
        deliveryStatus: q.delivery_status,
        verification: q.verification,
        duplicate: q.duplicate === undefined ? undefined : q.duplicate === 'true',
      });
      return { data: toPage(rows, q.limit, (c) => ({ ...presentCaptureSummary(c), delivery: c.delivery })) };
    },
  );

  app.get<{ Params: { id: string } }>('/requests/:id', { config: { auth: READ }, schema: { params: idParams, response: captureResponse } }, async (request) => {
    const id = pathId(request.params.id, 'Request');
    const capture = await getCapture(db, request.auth.organizationId, id);
    if (!capture) throw notFound(`Request ${id} not found.`);
    const summary = (await deliverySummaries(db, request.auth.organizationId, [capture.id])).get(capture.id);
    return { data: { ...presentCapture(capture), delivery: summary } };
  });

  app.get<{ Params: { id: string } }>('/requests/:id/body', { config: { auth: READ }, schema: { params: idParams, response: captureBodyResponse } }, async (request, reply) => {
    const id = pathId(request.params.id, 'Request');
    const capture = await getCapture(db, request.auth.organizationId, id);
    if (!capture) throw notFound(`Request ${id} not found.`);
    // The bytes and content-type are the sender's, so a browser must not run
    // them in this origin: no sniffing, and a sandbox if it renders HTML.
    return reply
      .header('content-type', capture.content_type ?? 'application/octet-stream')
      .header('x-content-type-options', 'nosniff')
      .header('content-security-policy', 'sandbox')
      .send(capture.body);
  });
}

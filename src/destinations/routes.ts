import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AppDeps } from '../http/deps.ts';
import { ApiError, badRequest, conflict, forbidden, missingField, notFound, planLimit } from '../http/errors.ts';
import { pageQuerySchema, toPage } from '../http/paging.ts';
import { idParams, pathId } from '../http/schemas.ts';
import { attachSavedDestination, createDestination, type AttachSavedInput, type CreateContext, type CreateDestinationInput } from './create-destination.ts';
import { deleteForwardDestination, listForwardDestinations, updateForwardDestination } from './forward-destinations.ts';
import { presentForward, presentSaved, presentSavedWithEndpoints } from './present.ts';
import { agentAssignProblem, type ForwardPatch } from './rules.ts';
import {
  deleteSavedDestination,
  getSavedDestination,
  listAttachments,
  listSavedDestinations,
  updateSavedDestination,
  type SavedPatch,
  type Viewer,
} from './saved-destinations.ts';
import { attachBodySchema, createBodySchema, destinationResponses as R, endpointDestinationParams, forwardPatchSchema, savedPatchSchema } from './schemas.ts';

const READ = { scopes: ['destinations:read'], permission: 'destinations.view' } as const;
const WRITE = { scopes: ['destinations:write'], permission: 'endpoints.edit' } as const;

const viewerOf = (request: FastifyRequest): Viewer => ({ memberId: request.auth.memberId, role: request.auth.role });


/** Maps a domain refusal to the error catalogue. */
function refusal(reason: string, message: string): ApiError {
  switch (reason) {
    case 'missing_field':
      return missingField(message);
    case 'endpoint_not_found':
    case 'destination_not_found':
    case 'not_found':
      return notFound(message);
    case 'plan_limit':
      return planLimit(message, 403);
    case 'already_attached':
      return conflict(message);
    case 'forbidden':
      return forbidden(message);
    default:
      return badRequest(message);
  }
}


/** Saved and forward destinations: /v1/destinations and /v1/endpoints/:id/destinations. */
export function destinationRoutes(app: FastifyInstance, { db, config }: AppDeps): void {
  const context = (request: FastifyRequest): CreateContext => ({
    organizationId: request.auth.organizationId,
    viewer: viewerOf(request),
    plan: request.auth.plan,
    maxForwardDestinations: config.plans[request.auth.plan].max_forward_destinations,
  });

  app.post<{ Body: CreateDestinationInput }>(
    '/destinations',
    {
      config: { auth: WRITE },
      schema: { body: createBodySchema, response: R.created },
      // The route declares what both flows need; the agent flow's extra
      // permission is checked here, before the body's details are judged,
      // so a viewer learns "forbidden" rather than which field was wrong.
      preValidation: async (request) => {
        const body = request.body as { destination_type?: unknown } | null | undefined;
        const problem = body && typeof body === 'object' && body.destination_type === 'agent' ? agentAssignProblem(request.auth.role) : undefined;
        if (problem) throw forbidden(problem);
      },
    },
    async (request, reply) => {
      const result = await createDestination(db, context(request), request.body);
      if (!result.ok) throw refusal(result.reason, result.message);
      if (result.kind === 'agent') return reply.status(201).send({ data: presentForward(result.destination) });
      const data = { ...presentSaved(result.destination), ...(result.forwardDestinationId ? { forward_destination_id: result.forwardDestinationId } : {}) };
      return reply.status(201).send(result.attachmentError ? { data, attachment_error: result.attachmentError } : { data });
    },
  );

  app.get<{ Querystring: { limit: number; before?: string } }>(
    '/destinations',
    { config: { auth: READ }, schema: { querystring: { type: 'object', additionalProperties: false, properties: pageQuerySchema }, response: R.page } },
    async (request) => {
      const { limit, before } = request.query;
      const rows = await listSavedDestinations(db, request.auth.organizationId, viewerOf(request), { limit: limit + 1, before });
      return { data: toPage(rows, limit, (r) => ({ ...presentSaved(r), endpoint_count: r.endpoint_count })) };
    },
  );

  app.get<{ Params: { id: string } }>('/destinations/:id', { config: { auth: READ }, schema: { params: idParams, response: R.one } }, async (request) => {
    const id = pathId(request.params.id, 'Destination');
    const saved = await getSavedDestination(db, request.auth.organizationId, viewerOf(request), id);
    if (!saved) throw notFound(`Destination ${id} not found.`);
    return { data: presentSavedWithEndpoints(saved, await listAttachments(db, request.auth.organizationId, saved.id)) };
  });

  app.patch<{ Params: { id: string }; Body: SavedPatch }>(
    '/destinations/:id',
    { config: { auth: WRITE }, schema: { params: idParams, body: savedPatchSchema, response: R.updated } },
    async (request) => {
      const id = pathId(request.params.id, 'Destination');
      const orgId = request.auth.organizationId;
      const result = await db.transaction((tx) => updateSavedDestination(tx, orgId, viewerOf(request), id, request.body));
      if (!result.ok) throw refusal(result.reason, result.message);
      return { data: presentSavedWithEndpoints(result.destination, await listAttachments(db, orgId, id)) };
    },
  );

  app.delete<{ Params: { id: string } }>('/destinations/:id', { config: { auth: WRITE }, schema: { params: idParams, response: R.deleted } }, async (request, reply) => {
    const id = pathId(request.params.id, 'Destination');
    if (!(await deleteSavedDestination(db, request.auth.organizationId, viewerOf(request), id))) throw notFound(`Destination ${id} not found.`);
    return reply.status(204).send();
  });

  app.get<{ Params: { id: string } }>('/endpoints/:id/destinations', { config: { auth: READ }, schema: { params: idParams, response: R.forwards } }, async (request) => {
    const endpointId = pathId(request.params.id, 'Endpoint');
    const rows = await listForwardDestinations(db, request.auth.organizationId, endpointId);
    if (!rows) throw notFound(`Endpoint ${endpointId} not found.`);
    return { data: { data: rows.map(presentForward) } };
  });

  app.post<{ Params: { id: string }; Body: AttachSavedInput }>(
    '/endpoints/:id/destinations',
    { config: { auth: WRITE }, schema: { params: idParams, body: attachBodySchema, response: R.attached } },
    async (request, reply) => {
      const endpointId = pathId(request.params.id, 'Endpoint');
      const result = await attachSavedDestination(db, context(request), endpointId, request.body);
      if (!result.ok) throw refusal(result.reason, result.message);
      return reply.status(201).send({ data: presentForward(result.destination) });
    },
  );

  app.patch<{ Params: { id: string; destination_id: string }; Body: ForwardPatch }>(
    '/endpoints/:id/destinations/:destination_id',
    { config: { auth: WRITE }, schema: { params: endpointDestinationParams, body: forwardPatchSchema, response: R.forwardUpdated } },
    async (request) => {
      const endpointId = pathId(request.params.id, 'Endpoint');
      const id = pathId(request.params.destination_id, 'Forward destination');
      const orgId = request.auth.organizationId;
      const result = await db.transaction((tx) => updateForwardDestination(tx, orgId, endpointId, id, request.body, request.auth.role));
      if (!result.ok) throw refusal(result.reason, result.message);
      return { data: presentForward(result.destination) };
    },
  );

  app.delete<{ Params: { id: string; destination_id: string } }>(
    '/endpoints/:id/destinations/:destination_id',
    { config: { auth: WRITE }, schema: { params: endpointDestinationParams, response: R.forwardDeleted } },
    async (request, reply) => {
      const endpointId = pathId(request.params.id, 'Endpoint');
      const id = pathId(request.params.destination_id, 'Forward destination');
      const result = await deleteForwardDestination(db, request.auth.organizationId, endpointId, id, request.auth.role);
      if (!result.ok) throw refusal(result.reason, result.message);
      return reply.status(204).send();
    },
  );
}

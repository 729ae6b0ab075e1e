import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../http/deps.ts';
import { badRequest, conflict, notFound, planLimit } from '../http/errors.ts';
import { pageQuerySchema, toPage } from '../http/paging.ts';
import { idParams, pathId } from '../http/schemas.ts';
import { addNote, getIncidentDetail, LIST_FILTERS, listIncidents, NOTE_MAX, type ListFilter } from './incidents.ts';
import { setIncidentStatus } from './lifecycle.ts';
import {
  cancelReplayBatch,
  getReplayBatch,
  MAX_RATE,
  MIN_RATE,
  pauseReplayBatch,
  queueIncidentReplay,
  resumeReplayBatch,
  type BatchChange,
} from './replay.ts';
import { INCIDENT_STATUSES, presentIncident, type IncidentStatus } from './store.ts';
import { EXAMPLE_INCIDENT, sampleEnvelope } from '../subscriptions/samples.ts';
import { incidentResponses as R } from './responses.ts';

const READ = { scopes: ['incidents:read'], permission: 'incidents.view' } as const;
// The specification: PATCH and replay need incidents:write and a creator role of super_admin, admin or developer.
const UPDATE = { scopes: ['incidents:write'], permission: 'incidents.update' } as const;
const REPLAY = { scopes: ['incidents:write'], permission: 'incidents.replay' } as const;

const listQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { status: { type: 'string', enum: LIST_FILTERS, default: 'open' }, ...pageQuerySchema },
} as const;
const recentQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { limit: { type: 'integer', minimum: 1, maximum: 100, default: 10 } },
} as const;
const patchBody = {
  type: 'object',
  additionalProperties: false,
  required: ['status'],
  properties: { status: { type: 'string', enum: INCIDENT_STATUSES } },
} as const;
const replayBody = {
  type: 'object',
  additionalProperties: false,
  required: ['requests_per_minute'],
  properties: { requests_per_minute: { type: 'integer', minimum: MIN_RATE, maximum: MAX_RATE } },
} as const;
const noteBody = {
  type: 'object',
  additionalProperties: false,
  required: ['body'],
  properties: { body: { type: 'string', minLength: 1, maxLength: NOTE_MAX, pattern: '\\S' } },
} as const;

function batchRefusal(r: Exclude<BatchChange, { ok: true }>, id: string): Error {
  return r.reason === 'not_found' ? notFound(`Replay batch ${id} not found.`) : conflict(`Replay batch ${id} is ${r.status}; that cannot be done now.`);
}

/** /v1/incidents and /v1/replay-batches. */
export function incidentRoutes(app: FastifyInstance, { db, config }: AppDeps): void {
  app.get<{ Querystring: { status: ListFilter; limit: number; before?: string } }>(
    '/incidents',
    { config: { auth: READ }, schema: { querystring: listQuery, response: R.page } },
    async (request) => {
      const { status, limit, before } = request.query;
      const rows = await listIncidents(db, request.auth.organizationId, { status, limit, before: before?.toLowerCase() });
      return { data: toPage(rows, limit, presentIncident) };
    },
  );

  // For REST-hook integrations (docs/subscriptions.md): what incident.opened
  // delivers, with the newest incident or a documented example, and the
  // newest incidents of any status, the list a Zapier trigger polls.
  app.get('/incidents/sample', { config: { auth: READ }, schema: { response: R.sample } }, async (request) => {
    const [latest] = await listIncidents(db, request.auth.organizationId, { status: 'all', limit: 1 });
    return { data: sampleEnvelope('incident.opened', { object: latest ? presentIncident(latest) : EXAMPLE_INCIDENT }, latest !== undefined) };
  });

  app.get<{ Querystring: { limit: number } }>('/incidents/recent', { config: { auth: READ }, schema: { querystring: recentQuery, response: R.recent } }, async (request) => {
    const rows = await listIncidents(db, request.auth.organizationId, { status: 'all', limit: request.query.limit });
    return { data: rows.slice(0, request.query.limit).map(presentIncident) };
  });

  app.get<{ Params: { id: string } }>('/incidents/:id', { config: { auth: READ }, schema: { params: idParams, response: R.detail } }, async (request) => {
    const id = pathId(request.params.id, 'Incident');
    const incident = await getIncidentDetail(db, request.auth.organizationId, id);
    if (!incident) throw notFound(`Incident ${id} not found.`);
    return { data: incident };
  });

  app.patch<{ Params: { id: string }; Body: { status: IncidentStatus } }>(
    '/incidents/:id',
    { config: { auth: UPDATE }, schema: { params: idParams, body: patchBody, response: R.updated } },
    async (request) => {
      const id = pathId(request.params.id, 'Incident');
      const r = await setIncidentStatus(db, request.auth.organizationId, id, request.body.status, request.auth.memberId);
      if (!r.ok) throw notFound(`Incident ${id} not found.`);
      return { data: presentIncident(r.incident) };
    },
  );

  app.post<{ Params: { id: string }; Body: { body: string } }>(
    '/incidents/:id/updates',
    { config: { auth: UPDATE }, schema: { params: idParams, body: noteBody, response: R.noted } },
    async (request, reply) => {
      const id = pathId(request.params.id, 'Incident');
      const update = await addNote(db, request.auth.organizationId, id, request.body.body, request.auth.memberId);
      if (!update) throw notFound(`Incident ${id} not found.`);
      return reply.status(201).send({ data: update });
    },
  );

  app.post<{ Params: { id: string }; Body: { requests_per_minute: number } }>(
    '/incidents/:id/replay',
    { config: { auth: REPLAY }, schema: { params: idParams, body: replayBody, response: R.replayed } },
    async (request) => {
      const id = pathId(request.params.id, 'Incident');
      const plan = { name: request.auth.plan, incidentReplay: config.plans[request.auth.plan].incident_replay };
      const r = await queueIncidentReplay(db, {
        organizationId: request.auth.organizationId,
        incidentId: id,
        requestsPerMinute: request.body.requests_per_minute,
        memberId: request.auth.memberId,
        plan,
      });
      if (!r.ok) throw r.reason === 'plan_limit' ? planLimit(r.message, 403) : r.reason === 'not_found' ? notFound(r.message) : badRequest(r.message);
      return { data: { replay_batch_id: r.replayBatchId, queued_count: r.queuedCount, requests_per_minute: r.requestsPerMinute } };
    },
  );

  app.get<{ Params: { id: string } }>('/replay-batches/:id', { config: { auth: READ }, schema: { params: idParams, response: R.batch } }, async (request) => {
    const id = pathId(request.params.id, 'Replay batch');
    const batch = await getReplayBatch(db, request.auth.organizationId, id);
    if (!batch) throw notFound(`Replay batch ${id} not found.`);
    return { data: batch };
  });

  for (const [action, run] of [
    ['cancel', cancelReplayBatch],
    ['pause', pauseReplayBatch],
    ['resume', resumeReplayBatch],
  ] as const) {
    app.post<{ Params: { id: string } }>(`/replay-batches/:id/${action}`, { config: { auth: REPLAY }, schema: { params: idParams, response: R.batchChanged } }, async (request) => {
      const id = pathId(request.params.id, 'Replay batch');
      const r = await run(db, request.auth.organizationId, id, request.auth.memberId);
      if (!r.ok) throw batchRefusal(r, id);
      return { data: await getReplayBatch(db, request.auth.organizationId, id) };
    });
  }
}

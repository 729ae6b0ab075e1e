import type { FastifyInstance } from 'fastify';
import { getEndpoint } from '../endpoints/endpoints.ts';
import type { AppDeps } from '../http/deps.ts';
import { badRequest, notFound } from '../http/errors.ts';
import { idParams, pathId } from '../http/schemas.ts';
import { isUuid } from '../db/ids.ts';
import { capturesAfter, TailHub } from './tail.ts';
import { TailAccess } from './tail-access.ts';
import { TAIL_DEFAULTS, TailStream } from './tail-stream.ts';
import { tailStreamResponse } from './schemas.ts';

const READ = { scopes: ['requests:read'], permission: 'requests.view' } as const;

/**
 * GET /v1/endpoints/:id/requests/stream: the endpoint's captures as
 * Server-Sent Events, live, on any node (docs/capture.md "Live tail").
 * `Last-Event-ID` (header, or `last_event_id` in the query for clients that
 * cannot set headers on a reconnect) first sends what is stored after it.
 */
export function tailRoutes(app: FastifyInstance, { db, config, logger, authenticator }: AppDeps): void {
  const hub = new TailHub(db, logger.child({ component: 'tail' }));
  const access = new TailAccess(db, authenticator, READ, logger.child({ component: 'tail' }));
  let listening: Promise<void> | undefined;
  const streams = new Set<TailStream>();
  const opts = { ...TAIL_DEFAULTS, heartbeatMs: config.sseHeartbeatMs };
  // Open streams are never idle: end them before the listener waits for its connections.
  app.addHook('preClose', async () => {
    hub.stop();
    for (const s of streams) s.end();
    await listening?.catch(() => {});
    await access.stop();
  });

  app.get<{ Params: { id: string }; Querystring: { last_event_id?: string } }>(
    '/endpoints/:id/requests/stream',
    {
      config: { auth: READ },
      schema: {
        params: idParams,
        querystring: { type: 'object', additionalProperties: false, properties: { last_event_id: { type: 'string' } } },
        response: tailStreamResponse,
      },
    },
    async (request, reply) => {
      const orgId = request.auth.organizationId;
      const endpointId = pathId(request.params.id, 'Endpoint');
      const header = request.headers['last-event-id'];
      const lastEventId = (typeof header === 'string' && header !== '' ? header : undefined) ?? request.query.last_event_id;
      if (lastEventId !== undefined && !isUuid(lastEventId)) throw badRequest('Last-Event-ID must be the id of a captured request (a UUID).');
      if (!(await getEndpoint(db, orgId, endpointId))) throw notFound(`Endpoint ${endpointId} not found.`);

      reply.hijack();
      const raw = reply.raw;
      // re-checked while open (TailAccess), told of late captures (TailHub); the LISTENs start with the first stream
      listening ??= Promise.all([
        access.start().catch((err) => logger.warn({ err }, 'live tail cannot listen for access changes; checking every 30 s only')),
        hub.start().catch((err) => logger.warn({ err }, 'live tail cannot listen for late-capture notices; captures committed late are in the list API only')),
      ]).then(() => {});
      await listening;
      let unwatch = () => {};
      const stream = new TailStream(raw, opts, () => {
        streams.delete(stream);
        unwatch();
      });
      unwatch = access.watch(stream, { authorization: request.headers.authorization, organizationId: orgId, endpointId }, request.auth.expiresAt);
      streams.add(stream);
      // the headers are written only once the stream is subscribed (TailStream.start)
      const open = () => {
        raw.writeHead(200, {
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-store',
          connection: 'keep-alive',
          // nginx and similar proxies would otherwise buffer the stream
          'x-accel-buffering': 'no',
          'x-request-id': request.id,
        });
        raw.flushHeaders();
      };
      await stream
        .start(hub, orgId, endpointId, (after) => capturesAfter(db, orgId, endpointId, after), lastEventId?.toLowerCase(), open)
        .catch((err) => {
          request.log.warn({ err }, 'live tail failed');
          stream.end();
        });
    },
  );
}

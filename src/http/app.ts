import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { AppDeps, RouteModule } from './deps.ts';
import { ApiError, errorBody, serviceUnavailable, type ErrorBody } from './errors.ts';
import { installInputGuard } from './input-guard.ts';
import { openApiRoutes, registerOpenApi } from './openapi.ts';
import { WeirLogController } from './request-logging.ts';
import { installRouteAuth } from './route-auth.ts';
import { describeValidationError, validatorCompiler } from './validation.ts';

const API_BODY_LIMIT = 1024 * 1024;

/**
 * The status and envelope a client sees for any error. Only ApiErrors and
 * Fastify's own client errors (code FST_*, status 4xx, messages that name no
 * internals) say what went wrong; anything else is a 500 whose details stay
 * in the log, so a driver's SQL text or a stack never reaches a client.
 */
export function errorResponse(err: unknown, requestId: string): { status: number; body: ErrorBody; unexpected: boolean } {
  if (err instanceof ApiError) return { status: err.statusCode, body: errorBody(err.code, err.message), unexpected: false };
  const { code, statusCode, message } = (err ?? {}) as { code?: unknown; statusCode?: unknown; message?: unknown };
  if (typeof code === 'string' && code.startsWith('FST_') && typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500) {
    if (statusCode === 413) return { status: 413, body: errorBody('payload_too_large', `The body is larger than ${API_BODY_LIMIT} bytes.`), unexpected: false };
    if (statusCode === 415) return { status: 400, body: errorBody('bad_request', 'Content-Type must be application/json.'), unexpected: false };
    if (statusCode === 404) return { status: 404, body: errorBody('not_found', String(message)), unexpected: false };
    return { status: 400, body: errorBody('bad_request', String(message)), unexpected: false };
  }
  return {
    status: 500,
    body: errorBody('internal_error', `Something went wrong on our side. Quote request id ${requestId} when reporting it.`),
    unexpected: true,
  };
}

function sendError(err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const { status, body, unexpected } = errorResponse(err, request.id);
  if (unexpected) request.log.error({ err }, 'unhandled error');
  return reply.status(status).send(body);
}

/**
 * A request Node's HTTP parser refuses (bad Content-Length, oversized
 * headers, timeout) never reaches Fastify's router: answer it on the socket,
 * still in the envelope.
 */
function answerClientError(this: FastifyInstance, err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, code, message] =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'request_timeout', 'The request took too long to arrive.']
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'headers_too_large', 'The request headers are too large.']
        : [400, 'bad_request', 'The request is not valid HTTP.'];
  this.log.debug({ err }, 'client error');
  const body = JSON.stringify(errorBody(code, message));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}

/**
 * Builds the management API (/v1), the operator API (/admin/v1) and the
 * dashboard. It never listens: server.ts does, and tests use inject().
 */
export async function buildApp(deps: AppDeps, modules: { v1: RouteModule[]; root: RouteModule[] }): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.-]{1,128}$/.test(given) ? given : randomUUID();
    },
    bodyLimit: API_BODY_LIMIT,
    // Our own hook below answers requests that arrive while closing, in the envelope.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    routerOptions: { ignoreTrailingSlash: true },
    clientErrorHandler: answerClientError,
    logController: new WeirLogController(),
    frameworkErrors: (err, request, reply) => sendError(err, request, reply),
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSchemaErrorFormatter((errors, context) => new ApiError('bad_request', 400, describeValidationError(errors as never, context)));

  // JSON is the only request body the API takes. An empty body is "no body"
  // (clients often send Content-Type: application/json on a DELETE); the
  // route's schema then decides whether a body was required.
  app.removeAllContentTypeParsers();
  // Fastify tests the pattern against the whole header, parameters included
  // ("application/json; charset=utf-8").
  app.addContentTypeParser(/^application\/([\w.+-]+\+)?json\s*(;|$)/i, { parseAs: 'string' }, (_req, text, done) => {
    const s = String(text);
    if (s.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(s));
    } catch {
      done(new ApiError('bad_request', 400, 'The body is not valid JSON.'), undefined);
    }
  });

  // Graceful shutdown: requests already in flight finish; one that arrives
  // after close() began (on a kept-alive connection) is told to go elsewhere.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', async (_request, reply) => {
    if (closing) {
      reply.header('connection', 'close');
      throw serviceUnavailable('This Weir node is shutting down; retry the request.');
    }
  });

  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
    // An in-flight request answered during shutdown must not leave its
    // kept-alive connection open: close() waits for every connection.
    if (closing) reply.header('connection', 'close');
  });

  app.setErrorHandler((err, request, reply) => sendError(err, request, reply));
  // NUL, lone surrogates and deep nesting, refused once for every route (src/http/input-guard.ts).
  installInputGuard(app);

  app.setNotFoundHandler((request, reply) => {
    reply.status(404).send(errorBody('not_found', `No route ${request.method} ${request.url.split('?')[0]}.`));
  });

  // before every route, so the document sees them all (src/http/openapi.ts)
  await registerOpenApi(app);
  await app.register(
    async (v1) => {
      installRouteAuth(v1, deps.authenticator);
      for (const m of modules.v1) await m(v1, deps);
    },
    { prefix: '/v1' },
  );
  for (const m of modules.root) await m(app, deps);
  await openApiRoutes(app, deps.urls);
  return app;
}

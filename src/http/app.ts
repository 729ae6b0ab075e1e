import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance } from 'fastify';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Authenticator } from '../auth/authenticate.ts';
import type { Config } from '../config.ts';
import type { Db } from '../db/db.ts';
import { ApiError, errorBody } from './errors.ts';
import { installRouteAuth } from './route-auth.ts';
import { describeValidationError, validatorCompiler } from './validation.ts';

/** What route modules get: the database, settings and shared services. Passed in, never imported. */
export interface AppDeps {
  db: Db;
  config: Config;
  authenticator: Authenticator;
  logger: Logger;
  /** The {base_url} and {ingest_url} written into responses; known once the listeners are bound. */
  urls: { publicUrl: string; ingestUrl: string };
}

export type RouteModule = (app: FastifyInstance, deps: AppDeps) => void | Promise<void>;

const API_BODY_LIMIT = 1024 * 1024;

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
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    routerOptions: { ignoreTrailingSlash: true },
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSchemaErrorFormatter((errors, context) => new ApiError('bad_request', 400, describeValidationError(errors as never, context)));

  // JSON is the only request body the API takes. An empty body is "no body"
  // (clients often send Content-Type: application/json on a DELETE); the
  // route's schema then decides whether a body was required.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(/^application\/([\w.+-]+\+)?json$/, { parseAs: 'string' }, (_req, text, done) => {
    const s = String(text);
    if (s.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(s));
    } catch {
      done(new ApiError('bad_request', 400, 'The body is not valid JSON.'), undefined);
    }
  });

  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });

  app.setErrorHandler((err: FastifyError | ApiError, request, reply) => {
    if (err instanceof ApiError) {
      return reply.status(err.statusCode).send(errorBody(err.code, err.message));
    }
    const status = err.statusCode ?? 500;
    if (status === 413) return reply.status(413).send(errorBody('payload_too_large', `The body is larger than ${API_BODY_LIMIT} bytes.`));
    if (status === 415) return reply.status(400).send(errorBody('bad_request', 'Content-Type must be application/json.'));
    if (status >= 400 && status < 500) {
      // Fastify's own client errors (bad headers, empty JSON body, ...): its message names no internals.
      return reply.status(400).send(errorBody('bad_request', err.message));
    }
    request.log.error({ err }, 'unhandled error');
    return reply.status(500).send(errorBody('internal_error', `Something went wrong on our side. Quote request id ${request.id} when reporting it.`));
  });

  app.setNotFoundHandler((request, reply) => {
    reply.status(404).send(errorBody('not_found', `No route ${request.method} ${request.url.split('?')[0]}.`));
  });

  await app.register(
    async (v1) => {
      installRouteAuth(v1, deps.authenticator);
      for (const m of modules.v1) await m(v1, deps);
    },
    { prefix: '/v1' },
  );
  for (const m of modules.root) await m(app, deps);
  return app;
}

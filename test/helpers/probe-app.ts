import type { FastifyInstance } from 'fastify';
import pino, { type Logger } from 'pino';
import { Authenticator } from '../../src/auth/authenticate.ts';
import type { Db } from '../../src/db/db.ts';
import { buildApp } from '../../src/http/app.ts';
import type { RouteModule } from '../../src/http/deps.ts';
import type { RouteAuth } from '../../src/auth/route-access.ts';
import { routeModules } from '../../src/routes.ts';
import { testConfig } from './app.ts';

/** A /v1 route that only answers 200 {data: {ok: true}}, declaring `auth` like a real route does. */
export interface Probe {
  method: 'GET' | 'POST';
  path: string;
  auth: RouteAuth | undefined;
  handler?: (app: FastifyInstance) => Promise<unknown>;
}

/** A test-only route module: real routes are built by other modules; these exercise the real hook. */
export function probeModule(probes: Probe[]): RouteModule {
  return (app) => {
    for (const p of probes) {
      app.route({
        method: p.method,
        url: p.path,
        config: p.auth === undefined ? {} : { auth: p.auth },
        handler: async () => (p.handler ? p.handler(app) : { data: { ok: true } }),
      });
    }
  };
}

export interface ProbeApp {
  app: FastifyInstance;
  authenticator: Authenticator;
  close(): Promise<void>;
}

/** The real app (every real route module) plus test-only /v1 route modules. */
export async function buildProbeApp(db: Db, extraV1: RouteModule[], logger: Logger = pino({ level: 'silent' })): Promise<ProbeApp> {
  const authenticator = new Authenticator(db);
  await authenticator.start();
  const app = await buildApp(
    { db, config: testConfig(), authenticator, logger, urls: { publicUrl: 'http://api.test', ingestUrl: 'http://ingest.test' } },
    { v1: [...routeModules.v1, ...extraV1], root: routeModules.root },
  );
  await app.ready();
  return {
    app,
    authenticator,
    async close() {
      await app.close();
      await authenticator.stop();
    },
  };
}

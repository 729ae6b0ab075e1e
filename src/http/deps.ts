import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Authenticator } from '../auth/authenticate.ts';
import type { Config } from '../config.ts';
import type { Db } from '../db/db.ts';
import type { WeirMetrics } from '../metrics/metrics.ts';

// The contract between the app and its route modules, kept apart from
// app.ts (which assembles the app): a route module names its inputs here
// instead of importing the module that mounts it, so imports run downward
// (docs/architecture.md).

/** What route modules get: the database, settings and shared services. Passed in, never imported. */
export interface AppDeps {
  db: Db;
  config: Config;
  authenticator: Authenticator;
  logger: Logger;
  /** The {base_url} and {ingest_url} written into responses; known once the listeners are bound. */
  urls: { publicUrl: string; ingestUrl: string };
  /** Absent when metrics are off (WEIR_METRICS=0). */
  metrics?: WeirMetrics;
}

export type RouteModule = (app: FastifyInstance, deps: AppDeps) => void | Promise<void>;

import pino from 'pino';
import { Authenticator } from '../auth/authenticate.ts';
import { loadConfig } from '../config.ts';
import { openPglite } from '../db/pglite.ts';
import { routeModules } from '../routes.ts';
import { buildApp } from './app.ts';

/**
 * The document /v1/openapi.json serves, from the real routes, for tools that
 * need it as a file (lint, client generation): the app is built on an empty
 * in-memory database and asked, never listening.
 */
export async function openApiDocument(publicUrl: string): Promise<Record<string, unknown>> {
  const db = await openPglite();
  const authenticator = new Authenticator(db);
  const config = loadConfig({ WEIR_LOG_LEVEL: 'silent' });
  const app = await buildApp({ db, config, authenticator, logger: pino({ level: 'silent' }), urls: { publicUrl, ingestUrl: publicUrl } }, routeModules);
  try {
    await app.ready();
    const res = await app.inject({ method: 'GET', url: '/v1/openapi.json' });
    if (res.statusCode !== 200) throw new Error(`GET /v1/openapi.json answered ${res.statusCode}`);
    return res.json();
  } finally {
    await app.close();
    await db.close();
  }
}

import http from 'node:http';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { Db } from '../db/db.ts';

export interface IngestDeps {
  db: Db;
  config: Config;
  logger: Logger;
}

export interface IngestListener {
  server: http.Server;
  port: number;
  close(): Promise<void>;
}

/** The public ingestion listener. Capture is not wired yet: every path answers 404. */
export async function startIngest(deps: IngestDeps, port: number): Promise<IngestListener> {
  const server = http.createServer((req, res) => {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: 'not found' }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, deps.config.host, () => resolve());
  });
  const bound = (server.address() as { port: number }).port;
  return {
    server,
    port: bound,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

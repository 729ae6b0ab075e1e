import type { Capture } from '../../src/requests/captures.ts';
import { createHash } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import pino from 'pino';
import type { Config } from '../../src/config.ts';
import type { Db } from '../../src/db/db.ts';
import { startIngest, type IngestListener, type IngestOptions } from '../../src/ingest/server.ts';
import { buildTestApp, call, seedOrg, testConfig, type Seeded, type TestApp } from '../helpers/app.ts';

export const sha256 = (b: Buffer | Uint8Array) => createHash('sha256').update(b).digest('hex');

/** The management API and a real ingest listener on 127.0.0.1:0, on one database. */
export interface Harness {
  api: TestApp;
  ingest: IngestListener;
  port: number;
  close(): Promise<void>;
}

export async function startHarness(db: Db, overrides: Partial<Config> = {}, opts: IngestOptions = {}): Promise<Harness> {
  const api = await buildTestApp(db, overrides);
  const ingest = await startIngest({ db, config: testConfig(overrides), logger: pino({ level: 'silent' }) }, 0, opts);
  return {
    api,
    ingest,
    port: ingest.port,
    async close() {
      await ingest.close();
      await api.close();
    },
  };
}

export async function endpointFor(api: TestApp, seeded: Seeded, body: Record<string, unknown> = { name: 'hook' }): Promise<{ id: string; slug: string }> {
  const r = await call(api.app, 'POST', '/v1/endpoints', { key: seeded.key, body });
  if (r.status !== 201) throw new Error(`create endpoint: ${r.status} ${JSON.stringify(r.json)}`);
  return r.json.data;
}

export async function orgWithEndpoint(db: Db, api: TestApp) {
  const seeded = await seedOrg(db);
  const endpoint = await endpointFor(api, seeded);
  return { ...seeded, endpoint };
}

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  json: any;
}

/** One request through node:http (a fresh connection each time unless an agent is given). */
export function send(
  port: number,
  method: string,
  path: string,
  opts: { headers?: Record<string, string | string[]>; body?: Buffer | string; agent?: http.Agent } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers: opts.headers, agent: opts.agent ?? false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        let json: any;
        try {
          json = JSON.parse(body.toString('utf8'));
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

/**
 * Writes exact bytes on a raw TCP connection and returns the raw answer
 * (read until the server closes or `until` matches what arrived).
 */
export function rawExchange(port: number, bytes: Buffer | string, opts: { until?: RegExp; timeoutMs?: number } = {}): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    const done = (closed: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, closed });
    };
    const timer = setTimeout(() => done(false), opts.timeoutMs ?? 5_000);
    socket.on('data', (d) => {
      text += d.toString('latin1');
      if (opts.until?.test(text)) done(false);
    });
    socket.on('end', () => done(true));
    socket.on('close', () => done(true));
    socket.on('error', (err) => {
      if ((err as NodeJS.ErrnoException).code === 'ECONNRESET' || (err as NodeJS.ErrnoException).code === 'EPIPE') done(true);
      else reject(err);
    });
    socket.write(bytes);
  });
}

/** All captures of an endpoint straight from the table, oldest first. */
export async function storedCaptures(db: Db, endpointId: string) {
  const { rows } = await db.query<Capture>('select * from captured_requests where endpoint_id = $1::uuid order by id', [endpointId]);
  return rows;
}

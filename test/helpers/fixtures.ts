/**
 * Test-only rows inserted with plain SQL (captures: through the ingest's
 * capture statement), for tests of modules that need a record of another
 * module without going through that module's API.
 */
import { randomBytes } from 'node:crypto';
import type { Db, Queryable } from '../../src/db/db.ts';
import { newId } from '../../src/db/ids.ts';
import { storeCaptures } from '../../src/ingest/store.ts';
import { idTime } from '../../src/requests/capture-ids.ts';
import type { Capture } from '../../src/requests/captures.ts';

export interface EndpointFixture {
  id: string;
  organization_id: string;
  name: string;
  slug: string;
}

/** An endpoint row of the organization (slug random, no forward_url unless given). */
export async function insertEndpoint(
  db: Queryable,
  organizationId: string,
  opts: { name?: string; forwardUrl?: string | null; createdBy?: string | null } = {},
): Promise<EndpointFixture> {
  const id = newId();
  const slug = randomBytes(8).toString('hex');
  const name = opts.name ?? `endpoint-${slug.slice(0, 6)}`;
  await db.query(
    `insert into endpoints (id, organization_id, created_by, slug, name, forward_url) values ($1::uuid, $2::uuid, $3::uuid, $4, $5, $6)`,
    [id, organizationId, opts.createdBy ?? null, slug, name, opts.forwardUrl ?? null],
  );
  return { id, organization_id: organizationId, name, slug };
}

export interface ForwardDestinationFixture {
  id: string;
  endpoint_id: string;
}

/** A forward destination row on an endpoint (https unless agentId is given); every setting optional. */
export async function insertForwardDestination(
  db: Queryable,
  endpoint: { id: string; organization_id: string },
  opts: {
    url?: string;
    name?: string;
    enabled?: boolean;
    methodOverride?: string | null;
    sortOrder?: number;
    retryEnabled?: boolean;
    retrySchedule?: number[];
    intelligentRetry?: boolean;
    rateLimitPerMinute?: number | null;
    agentId?: string;
    targetPort?: number;
    targetPath?: string;
  } = {},
): Promise<ForwardDestinationFixture> {
  const id = newId();
  const agent = opts.agentId !== undefined;
  await db.query(
    `insert into forward_destinations (id, organization_id, endpoint_id, name, destination_type, url, agent_id, target_port, target_path,
                                       enabled, method_override, sort_order, retry_enabled, retry_schedule, intelligent_retry,
                                       rate_limit_enabled, rate_limit_per_minute)
     values ($1::uuid, $2::uuid, $3::uuid, $4, $5, $6, $7::uuid, $8, $9, $10, $11, $12, $13,
             coalesce($14::int[], '{5,300,1800,7200,18000,36000,36000}'), $15, $16, $17)`,
    [
      id,
      endpoint.organization_id,
      endpoint.id,
      opts.name ?? `dest-${id.slice(-6)}`,
      agent ? 'agent' : 'https',
      agent ? null : (opts.url ?? 'https://example.com/hook'),
      opts.agentId ?? null,
      agent ? (opts.targetPort ?? 3000) : null,
      agent ? (opts.targetPath ?? '/hook') : null,
      opts.enabled ?? true,
      opts.methodOverride ?? null,
      opts.sortOrder ?? 0,
      opts.retryEnabled ?? true,
      opts.retrySchedule ?? null,
      opts.intelligentRetry ?? true,
      opts.rateLimitPerMinute != null,
      opts.rateLimitPerMinute ?? null,
    ],
  );
  return { id, endpoint_id: endpoint.id };
}

export interface CaptureFixture {
  id: string;
  receivedAt: Date;
}

export type CaptureInput = Partial<Omit<Capture, 'body' | 'organization_id' | 'endpoint_id' | 'received_at' | 'body_size'>> & { body?: Buffer | string };

/**
 * A Capture of the endpoint as the ingest listener would build it. Defaults:
 * a new id (received_at is its millisecond, as in src/requests), POST, empty
 * path and query, a JSON content-type header, an empty body, content_type
 * taken from the headers, source 127.0.0.1.
 */
export function captureOf(endpoint: { id: string; organization_id: string }, c: CaptureInput = {}): Capture {
  const id = c.id ?? newId();
  const headers = c.headers ?? [['content-type', 'application/json']];
  const body = typeof c.body === 'string' ? Buffer.from(c.body) : (c.body ?? Buffer.alloc(0));
  return {
    id,
    organization_id: endpoint.organization_id,
    endpoint_id: endpoint.id,
    received_at: new Date(idTime(id)),
    method: c.method ?? 'POST',
    path: c.path ?? '',
    query: c.query ?? '',
    headers,
    body,
    body_size: body.length,
    content_type: c.content_type !== undefined ? c.content_type : (headers.find(([n]) => n.toLowerCase() === 'content-type')?.[1] ?? null),
    source_ip: c.source_ip !== undefined ? c.source_ip : '127.0.0.1',
    ...(c.verification_status ? { verification_status: c.verification_status, verification_reason: c.verification_reason ?? null, rejected: c.rejected ?? false } : {}),
  };
}

/**
 * Captured requests stored the way the ingest batcher stores them: one
 * capture statement (src/ingest/store.ts storeCaptures) inserts the capture
 * rows and their deliveries together and wakes the delivery workers.
 * Defaults as captureOf(). Throws unless every capture was stored.
 */
export async function insertCaptures(db: Db, endpoint: { id: string; organization_id: string }, captures: CaptureInput[]): Promise<CaptureFixture[]> {
  const caps = captures.map((c) => captureOf(endpoint, c));
  const outcomes = await storeCaptures(db, caps);
  const refused = outcomes.findIndex((o) => o !== 'stored');
  if (refused >= 0) throw new Error(`insertCaptures: capture ${refused} was not stored: ${outcomes[refused]}`);
  return caps.map((c) => ({ id: c.id, receivedAt: c.received_at }));
}

import type { Queryable } from '../db/db.ts';
import { idTime } from './capture-ids.ts';

/** One HTTP request as captured on an ingestion URL. */
export interface Capture {
  id: string;
  organization_id: string;
  endpoint_id: string;
  received_at: Date;
  method: string;
  /** After /h/{slug}: '' or starting with '/', exactly as sent. */
  path: string;
  /** The raw query string without '?', '' when absent. */
  query: string;
  /** Arrival order, original case, duplicates kept. */
  headers: [string, string][];
  body: Buffer;
  body_size: number;
  content_type: string | null;
  source_ip: string | null;
}

export type CaptureSummary = Omit<Capture, 'body'>;

/** An endpoint of a batch as the insert found it: absent from the map when deleted or locked by a delete. */
export type EndpointStates = Map<string, { paused: boolean }>;

/**
 * How a batch's bodies travel: all of them concatenated in ONE parameter,
 * cut back apart by byte offsets in SQL. 'binary' (node-postgres) sends it
 * as a binary bytea parameter: no hex doubling and no array literal for the
 * server to parse, about half the statement's cost for 1 KiB bodies.
 * 'hex' (PGlite) sends it as hex text decoded once by the database, because
 * PGlite's own bytea serializer builds one JS string per byte.
 */
export type BodyTransport = 'binary' | 'hex';

/**
 * Inserts a batch of captures in ONE statement and one round trip: each
 * other column travels as one array parameter and unnest() turns them back
 * into rows. body_size is the length of the bytes stored.
 *
 * The same statement locks the batch's endpoints FOR KEY SHARE SKIP LOCKED
 * and inserts only captures of endpoints that exist and are not paused, so
 * a pause or delete that committed before this statement is obeyed whatever
 * the ingest cache said. The lock keeps those endpoints from being deleted
 * until we commit (an edit such as pausing does not conflict with it); SKIP
 * LOCKED keeps a slow delete of an endpoint with a million captures from
 * stalling everyone else's batch. This reads the endpoints table, which
 * src/endpoints owns, because doing it here saves a round trip per batch.
 * Byte-exactness on both drivers is tested in test/requests/captures.test.ts.
 */
export async function insertCaptures(tx: Queryable, captures: readonly Capture[], transport: BodyTransport): Promise<EndpointStates> {
  if (captures.length === 0) return new Map();
  const col = <T>(f: (c: Capture) => T) => captures.map(f);
  const offsets: number[] = [];
  let total = 0;
  for (const c of captures) {
    offsets.push(total);
    total += c.body.length;
  }
  const blob = Buffer.concat(col((c) => c.body), total);
  const { rows } = await tx.query<{ id: string; paused: boolean }>(
    `with live as (
       select id, paused from endpoints where id = any($13::uuid[]) for key share skip locked
     ), blob as (
       select ${transport === 'binary' ? '$14::bytea' : "decode($14::text, 'hex')"} as bytes
     ), stored as (
       insert into captured_requests
         (id, organization_id, endpoint_id, received_at, method, path, query, headers, body, body_size, content_type, source_ip)
       select u.id, u.organization_id, u.endpoint_id, u.received_at, u.method, u.path, u.query, u.headers::jsonb, b.body,
              octet_length(b.body), u.content_type, u.source_ip
         from blob,
              unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::timestamptz[], $5::text[], $6::text[], $7::text[], $8::text[],
                     $9::int[], $10::int[], $11::text[], $12::text[])
                as u(id, organization_id, endpoint_id, received_at, method, path, query, headers, off, len, content_type, source_ip)
              cross join lateral (select substring(blob.bytes from u.off + 1 for u.len) as body) b
              join live on live.id = u.endpoint_id and not live.paused
     )
     select id, paused from live`,
    [
      col((c) => c.id),
      col((c) => c.organization_id),
      col((c) => c.endpoint_id),
      col((c) => c.received_at.toISOString()),
      col((c) => c.method),
      col((c) => c.path),
      col((c) => c.query),
      col((c) => JSON.stringify(c.headers)),
      offsets,
      col((c) => c.body.length),
      col((c) => c.content_type),
      col((c) => c.source_ip),
      [...new Set(col((c) => c.endpoint_id))],
      transport === 'binary' ? blob : blob.toString('hex'),
    ],
  );
  return new Map(rows.map((r) => [r.id, { paused: r.paused }]));
}

/**
 * Deletes every capture of an endpoint; called by deleteEndpoint in its
 * transaction after the endpoint row is gone. That order matters: deleting
 * the row waits for capture batches holding its KEY SHARE lock to commit,
 * so this statement (a fresh snapshot) sees and removes their rows too, and
 * later batches no longer find the endpoint. Nothing is left orphaned.
 */
export async function deleteEndpointCaptures(tx: Queryable, endpointId: string): Promise<number> {
  const res = await tx.query('delete from captured_requests where endpoint_id = $1::uuid', [endpointId]);
  return res.rowCount;
}

const SUMMARY = 'id, organization_id, endpoint_id, received_at, method, path, query, headers, body_size, content_type, source_ip';

/**
 * One capture of an organization. received_at is derived from the id, so the
 * lookup touches one partition; another organization's id is simply absent.
 */
export async function getCapture(db: Queryable, organizationId: string, id: string): Promise<Capture | undefined> {
  // The body comes back as hex text for the same reason it goes in as hex:
  // PGlite's bytea parser costs one parseInt per byte (seconds for 10 MiB).
  const { rows } = await db.query<CaptureSummary & { body_hex: string }>(
    `select ${SUMMARY}, encode(body, 'hex') as body_hex from captured_requests
      where id = $1::uuid and received_at = $2::timestamptz and organization_id = $3::uuid`,
    [id, new Date(idTime(id)).toISOString(), organizationId],
  );
  const row = rows[0];
  if (!row) return undefined;
  const { body_hex, ...rest } = row;
  return { ...rest, body: Buffer.from(body_hex, 'hex') };
}

export interface CaptureFilters {
  limit: number;
  /** Cursor: captures with an id less than this one. */
  before?: string;
  methods?: string[];
  since?: Date;
  until?: Date;
  /** Text searched in header names and values (case-insensitive), path and query (case-insensitive) and body bytes (exact). */
  q?: string;
}

/**
 * A page of an endpoint's captures, newest first, without bodies (a page of
 * 100 could otherwise be a gigabyte). Fetches limit + 1 rows for toPage().
 * Only the conditions given are written into the SQL, so PostgreSQL can
 * prune partitions on the time bounds.
 */
export async function listCaptures(db: Queryable, organizationId: string, endpointId: string, f: CaptureFilters): Promise<CaptureSummary[]> {
  const params: unknown[] = [endpointId, organizationId];
  const p = (v: unknown) => `$${params.push(v)}`;
  const where = ['endpoint_id = $1::uuid', 'organization_id = $2::uuid'];
  if (f.before) where.push(`id < ${p(f.before)}::uuid`, `received_at <= ${p(new Date(idTime(f.before)).toISOString())}::timestamptz`);
  if (f.methods?.length) where.push(`method = any(${p(f.methods)}::text[])`);
  if (f.since) where.push(`received_at >= ${p(f.since.toISOString())}::timestamptz`);
  if (f.until) where.push(`received_at < ${p(f.until.toISOString())}::timestamptz`);
  if (f.q) {
    const like = p('%' + f.q.replace(/[\\%_]/g, '\\$&') + '%');
    where.push(`(exists (select 1 from jsonb_array_elements(headers) h where h->>0 ilike ${like} or h->>1 ilike ${like})
       or (path || '?' || query) ilike ${like}
       or position(${p(Buffer.from(f.q, 'utf8'))}::bytea in body) > 0)`);
  }
  const { rows } = await db.query<CaptureSummary>(
    `select ${SUMMARY} from captured_requests where ${where.join(' and ')} order by id desc limit ${p(f.limit + 1)}`,
    params,
  );
  return rows;
}

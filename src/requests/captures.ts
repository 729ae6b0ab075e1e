import type { Db, Queryable } from '../db/db.ts';
import { captureDeliveryStateSql, deliverySummaryLateralSql, summaryOfRow, type CaptureDeliveryState, type DeliverySummary, type SummaryColumns } from '../delivery/summary.ts';
import type { FailureReason, VerificationStatus } from '../verification/verify.ts';
import { idTimestamp, isoTime } from './capture-ids.ts';

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
  /** Signature verification (src/verification): null when the endpoint had none. Optional on the write side, always read. */
  verification_status?: 'verified' | 'failed' | null;
  verification_reason?: FailureReason | null;
  /** Refused by enforce: the sender got 401; stored, never forwarded or announced. */
  rejected?: boolean;
  /** Deduplication (src/routing/dedup.ts): the first capture of this one's key within the window; null when it is not a duplicate. Always read. */
  duplicate_of?: string | null;
  /** Write side only: the deduplication key's SHA-256 hex digest and the endpoint's window, for an endpoint with deduplication. */
  dedup_key?: string | null;
  dedup_window_seconds?: number;
}

export type CaptureSummary = Omit<Capture, 'body'>;

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

/**
 * The columns of a CaptureSummary: every column but the body. The one list
 * for each read that leaves the body out (the capture pages here, the live
 * tail in tail.ts), so a column added to captures is added to all of them.
 */
export const CAPTURE_SUMMARY_COLUMNS = 'id, organization_id, endpoint_id, received_at, method, path, query, headers, body_size, content_type, source_ip, verification_status, verification_reason, rejected, duplicate_of';

/**
 * One capture of an organization. received_at is derived from the id, so the
 * lookup touches one partition; another organization's id is simply absent.
 */
export async function getCapture(db: Queryable, organizationId: string, id: string): Promise<Capture | undefined> {
  // The body comes back as hex text: PGlite's bytea parser costs one
  // parseInt per byte (seconds for 10 MiB).
  const { rows } = await db.query<CaptureSummary & { body_hex: string }>(
    `select ${CAPTURE_SUMMARY_COLUMNS}, encode(body, 'hex') as body_hex from captured_requests
      where id = $1::uuid and received_at = $2::timestamptz and organization_id = $3::uuid`,
    [id, idTimestamp(id), organizationId],
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
  /** Only captures whose delivery summary has this status (src/delivery/summary.ts). */
  deliveryStatus?: CaptureDeliveryState;
  /** Only captures whose signature verification had this status. */
  verification?: VerificationStatus;
  /** true: only duplicates (duplicate_of set); false: only captures that are not duplicates. */
  duplicate?: boolean;
}

/**
 * A page of an endpoint's captures, newest first, without bodies (a page of
 * 100 could otherwise be a gigabyte). Fetches limit + 1 rows for toPage().
 * Only the conditions given are written into the SQL, so PostgreSQL can
 * prune partitions on the time bounds.
 */
export async function listCaptures(db: Db, organizationId: string, endpointId: string, f: CaptureFilters): Promise<CaptureSummary[]> {
  const page = capturePageStatement(organizationId, endpointId, f);
  return withIndexPlan(db, async (tx) => (await tx.query<CaptureSummary>(page.text, page.params)).rows);
}

export type CaptureListItem = CaptureSummary & { delivery: DeliverySummary };

/**
 * listCaptures with each capture's delivery summary (src/delivery/summary.ts),
 * read in the same statement: the page, then one deliveries index probe per
 * row of it (bench/capture-page.ts measures what that adds).
 */
export async function listCapturesWithDelivery(db: Db, organizationId: string, endpointId: string, f: CaptureFilters): Promise<CaptureListItem[]> {
  const page = capturePageStatement(organizationId, endpointId, f);
  const text = `select c.*, s.* from (${page.text}) c
     left join lateral ${deliverySummaryLateralSql('c.id', 'c.organization_id')} s on true
     order by c.id desc`;
  const rows = await withIndexPlan(db, async (tx) => (await tx.query<CaptureSummary & SummaryColumns>(text, page.params)).rows);
  return rows.map(({ delivery_status, delivery_destinations, delivery_delivered, delivery_retrying, delivery_pending, delivery_failed, ...c }) => ({
    ...c,
    delivery: summaryOfRow({ delivery_status, delivery_destinations, delivery_delivered, delivery_retrying, delivery_pending, delivery_failed }),
  }));
}

/** The capture page statement (listCaptures), as text and parameters. */
export function capturePageStatement(organizationId: string, endpointId: string, f: CaptureFilters): { text: string; params: unknown[] } {
  const params: unknown[] = [endpointId, organizationId];
  const p = (v: unknown) => `$${params.push(v)}`;
  const where = ['endpoint_id = $1::uuid', 'organization_id = $2::uuid'];
  if (f.before) where.push(`id < ${p(f.before)}::uuid`, `received_at <= ${p(idTimestamp(f.before))}::timestamptz`);
  if (f.methods?.length) where.push(`method = any(${p(f.methods)}::text[])`);
  if (f.since) where.push(`received_at >= ${p(isoTime(f.since.getTime()))}::timestamptz`);
  if (f.until) where.push(`received_at < ${p(isoTime(f.until.getTime()))}::timestamptz`);
  if (f.q) {
    const like = p('%' + f.q.replace(/[\\%_]/g, '\\$&') + '%');
    where.push(`(exists (select 1 from jsonb_array_elements(headers) h where h->>0 ilike ${like} or h->>1 ilike ${like})
       or (path || '?' || query) ilike ${like}
       or position(${p(Buffer.from(f.q, 'utf8'))}::bytea in body) > 0)`);
  }
  // qualified: the state's subquery reads deliveries, which has an id and organization_id too
  if (f.deliveryStatus) where.push(`${captureDeliveryStateSql('captured_requests.id', 'captured_requests.organization_id')} = ${p(f.deliveryStatus)}`);
  if (f.verification) where.push(`verification_status = ${p(f.verification)}`);
  if (f.duplicate !== undefined) where.push(f.duplicate ? 'duplicate_of is not null' : 'duplicate_of is null');
  return { text: `select ${CAPTURE_SUMMARY_COLUMNS} from captured_requests where ${where.join(' and ')} order by id desc limit ${p(f.limit + 1)}`, params };
}

/**
 * Runs fn in a transaction whose plans cannot depend on statistics. A day
 * partition filled faster than it is analyzed has none: the planner then
 * expects a handful of the endpoint's rows and reads ALL of them (bitmap
 * scan) to sort them, 225 ms a page at 200,000 captures against 0.4 ms.
 * With seq and bitmap scans off the table, walking the (endpoint_id, id)
 * index backwards, which stops after the page, is the cheapest plan left
 * (test/db/query-plans.test.ts checks it on 100,000 unanalyzed captures).
 */
export function withIndexPlan<T>(db: Db, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    await tx.exec('set local enable_seqscan = off; set local enable_bitmapscan = off');
    return fn(tx);
  });
}

/**
 * Captures by id, with bodies, oldest first: the request.captured producer's
 * read of the captures its outbox names. The received_at bounds let
 * PostgreSQL look only in the partitions of those days.
 */
export async function capturesByIds(db: Queryable, ids: readonly string[], from: Date, to: Date): Promise<Capture[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<CaptureSummary & { body_hex: string }>(
    `select ${CAPTURE_SUMMARY_COLUMNS}, encode(body, 'hex') as body_hex from captured_requests
      where id = any($1::uuid[]) and received_at >= $2::timestamptz and received_at <= $3::timestamptz
      order by id`,
    [ids, new Date(from).toISOString(), new Date(to).toISOString()],
  );
  return rows.map(({ body_hex, ...rest }) => ({ ...rest, body: Buffer.from(body_hex, 'hex') }));
}

/** An endpoint's most recent capture (the sample payload of request.captured), or undefined. */
export async function latestCapture(db: Queryable, organizationId: string, endpointId: string): Promise<Capture | undefined> {
  const { rows } = await db.query<{ id: string }>(
    `select id from captured_requests where endpoint_id = $1::uuid and organization_id = $2::uuid order by id desc limit 1`,
    [endpointId, organizationId],
  );
  return rows[0] ? getCapture(db, organizationId, rows[0].id) : undefined;
}

import type { Db, Queryable } from '../db/db.ts';
import { newId } from '../db/ids.ts';
import { httpsTargetUrlProblem } from '../delivery/target-url.ts';
import { getEndpoint } from '../endpoints/endpoints.ts';
import { EVENT_TYPES, isEventType, type EventType } from './event-types.ts';
import { newSecret } from './signing.ts';

/** How long the old secret keeps signing after a rotation: a day to deploy the new one. */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60_000;

export interface SubscriptionRow {
  id: string;
  organization_id: string;
  endpoint_id: string | null;
  target_url: string;
  event_types: EventType[];
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  status: 'active' | 'failing' | 'unsubscribed';
  status_reason: string | null;
  consecutive_failures: number;
  failing_since: Date | null;
  last_success_at: Date | null;
  last_failure_at: Date | null;
  created_by: string | null;
  created_at: Date;
  updated_at: Date;
}

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

/** A subscription as the API shows it: never its secret (shown once, at creation and rotation). */
export function presentSubscription(r: SubscriptionRow) {
  return {
    id: r.id,
    target_url: r.target_url,
    event_types: r.event_types,
    endpoint_id: r.endpoint_id,
    status: r.status,
    status_reason: r.status_reason,
    consecutive_failures: r.consecutive_failures,
    failing_since: iso(r.failing_since),
    last_success_at: iso(r.last_success_at),
    last_failure_at: iso(r.last_failure_at),
    previous_secret_expires_at: r.previous_secret && r.previous_secret_expires_at && new Date(r.previous_secret_expires_at) > new Date() ? iso(r.previous_secret_expires_at) : null,
    created_by: r.created_by,
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
  };
}

export interface NewSubscription {
  organizationId: string;
  targetUrl: string;
  eventTypes: readonly string[];
  endpointId?: string | null;
  createdBy: string | null;
}

export type CreateResult =
  | { ok: true; subscription: SubscriptionRow }
  | { ok: false; reason: 'invalid'; message: string }
  | { ok: false; reason: 'endpoint_not_found' };

/** Why a subscription's fields are refused, or undefined. */
export function subscriptionProblem(s: Pick<NewSubscription, 'targetUrl' | 'eventTypes'>): string | undefined {
  const url = httpsTargetUrlProblem(s.targetUrl, 'target_url');
  if (url) return url;
  if (s.eventTypes.length === 0) return `Field "event_types" must list at least one of ${EVENT_TYPES.join(', ')}.`;
  const unknown = s.eventTypes.filter((t) => !isEventType(t));
  if (unknown.length > 0) return `Unknown event type${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}; the event types are ${EVENT_TYPES.join(', ')}.`;
  if (new Set(s.eventTypes).size !== s.eventTypes.length) return 'Field "event_types" lists an event type twice.';
  return undefined;
}

export async function createSubscription(db: Db, s: NewSubscription): Promise<CreateResult> {
  const problem = subscriptionProblem(s);
  if (problem) return { ok: false, reason: 'invalid', message: problem };
  if (s.endpointId && !(await getEndpoint(db, s.organizationId, s.endpointId))) return { ok: false, reason: 'endpoint_not_found' };
  // The id is a UUIDv7: its time is where request.captured starts (src/subscriptions/capture-events.ts).
  const { rows } = await db.query<SubscriptionRow>(
    `insert into subscriptions (id, organization_id, endpoint_id, target_url, event_types, secret, created_by)
     values ($1::uuid, $2::uuid, $3::uuid, $4, $5::text[], $6, $7::uuid) returning *`,
    [newId(), s.organizationId, s.endpointId ?? null, s.targetUrl, s.eventTypes, newSecret(), s.createdBy],
  );
  return { ok: true, subscription: rows[0] };
}

export async function listSubscriptions(db: Queryable, organizationId: string, o: { limit: number; before?: string }): Promise<SubscriptionRow[]> {
  const { rows } = await db.query<SubscriptionRow>(
    `select * from subscriptions where organization_id = $1::uuid and ($2::uuid is null or id < $2::uuid) order by id desc limit $3`,
    [organizationId, o.before ?? null, o.limit + 1],
  );
  return rows;
}

export async function getSubscription(db: Queryable, organizationId: string, id: string): Promise<SubscriptionRow | undefined> {
  const { rows } = await db.query<SubscriptionRow>(`select * from subscriptions where id = $1::uuid and organization_id = $2::uuid`, [id, organizationId]);
  return rows[0];
}

/** Deletes a subscription and, with it, its events still waiting (the foreign key cascades). */
export async function deleteSubscription(db: Queryable, organizationId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query(`delete from subscriptions where id = $1::uuid and organization_id = $2::uuid`, [id, organizationId]);
  return rowCount > 0;
}

/**
 * A new secret; the current one becomes the previous one and keeps signing
 * (both signatures in webhook-signature) for `overlapMs`. A second rotation
 * within the overlap drops the oldest secret.
 */
export async function rotateSecret(db: Queryable, organizationId: string, id: string, overlapMs = ROTATION_OVERLAP_MS): Promise<SubscriptionRow | undefined> {
  const { rows } = await db.query<SubscriptionRow>(
    `update subscriptions
        set previous_secret = secret, secret = $3, previous_secret_expires_at = now() + $4 * interval '1 millisecond', updated_at = now()
      where id = $1::uuid and organization_id = $2::uuid
      returning *`,
    [id, organizationId, newSecret(), overlapMs],
  );
  return rows[0];
}

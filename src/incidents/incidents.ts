import type { Db, Queryable } from '../db/db.ts';
import { announceIncident } from './events.ts';
import { addUpdate, destinationIdOf, findIncident, INCIDENT_COLUMNS, presentIncident, type IncidentRow } from './store.ts';

/** Reading incidents and adding members' notes: what GET /v1/incidents[/:id] and POST .../updates call. */

export const LIST_FILTERS = ['open', 'investigating', 'resolved', 'all'] as const;
export type ListFilter = (typeof LIST_FILTERS)[number];
export const FAILURES_IN_DETAIL = 100;
export const NOTE_MAX = 10_000;

const STATUSES_OF: Record<ListFilter, string[]> = {
  // the specification's default filter: open includes investigating
  open: ['open', 'investigating'],
  investigating: ['investigating'],
  resolved: ['resolved'],
  all: ['open', 'investigating', 'resolved'],
};

/** A page of the organization's incidents, newest first; `limit + 1` rows so the caller knows whether more follow. */
export async function listIncidents(
  db: Queryable,
  organizationId: string,
  q: { status: ListFilter; limit: number; before?: string },
): Promise<IncidentRow[]> {
  const { rows } = await db.query<IncidentRow>(
    `select ${INCIDENT_COLUMNS} from incidents
      where organization_id = $1::uuid and status = any($2::text[]) and ($3::uuid is null or id < $3::uuid)
      order by id desc limit $4`,
    [organizationId, STATUSES_OF[q.status], q.before ?? null, q.limit + 1],
  );
  return rows;
}

export interface FailureRow {
  id: string;
  organization_id: string;
  request_id: string;
  endpoint_id: string;
  forward_destination_id: string | null;
  destination_url: string;
  status_code: number | null;
  error_class: string | null;
  error: string | null;
  failed_at: Date;
  recovered_at: Date | null;
  next_attempt_at: Date | null;
  replay_delivery_id: string | null;
  replayed_at: Date | null;
  replay_status_code: number | null;
}

export const FAILURE_STATUSES = ['retrying', 'failed', 'replaying', 'replay_failed', 'recovered'] as const;
export type FailureStatus = (typeof FAILURE_STATUSES)[number];

/**
 * Where a failure stands (docs/incidents.md): recovered when a later
 * attempt, retry or replay, delivered it; else the replay's state when an
 * incident replay took it; else retrying while its delivery waits for a
 * retry; else failed (no retry left).
 */
export function failureStatus(f: Pick<FailureRow, 'recovered_at' | 'replay_delivery_id' | 'replayed_at' | 'next_attempt_at'>): FailureStatus {
  if (f.recovered_at) return 'recovered';
  if (f.replay_delivery_id) return f.replayed_at ? 'replay_failed' : 'replaying';
  return f.next_attempt_at ? 'retrying' : 'failed';
}

/** The columns presentFailure reads. */
export const FAILURE_COLUMNS = `id, organization_id, request_id, endpoint_id, forward_destination_id, destination_url, status_code, error_class, error,
  failed_at, recovered_at, next_attempt_at, replay_delivery_id, replayed_at, replay_status_code`;

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

export function presentFailure(f: FailureRow) {
  return {
    request_id: f.request_id,
    endpoint_id: f.endpoint_id,
    destination_id: destinationIdOf(f.organization_id, f.forward_destination_id, f.destination_url),
    destination_url: f.destination_url,
    status: failureStatus(f),
    next_attempt_at: f.recovered_at || f.replay_delivery_id ? null : iso(f.next_attempt_at),
    status_code: f.status_code,
    error: f.error,
    error_class: f.error_class,
    failed_at: iso(f.failed_at),
    recovered_at: iso(f.recovered_at),
    replayed_at: iso(f.replayed_at),
    replay_status_code: f.replay_status_code,
  };
}

/** An incident with its newest failures (at most 100) and its updates, newest first; undefined outside the organization. */
export async function getIncidentDetail(db: Queryable, organizationId: string, id: string) {
  const incident = await findIncident(db, organizationId, id);
  if (!incident) return undefined;
  const [failures, updates, unreplayed, batch] = await Promise.all([
    db.query<FailureRow>(
      `select ${FAILURE_COLUMNS}
         from incident_failures where incident_id = $1::uuid order by failed_at desc, id desc limit $2`,
      [incident.id, FAILURES_IN_DETAIL],
    ),
    db.query<{ id: string; body: string; is_system: boolean; author_id: string; created_at: Date }>(
      `select id, body, is_system, author_id, created_at from incident_updates where incident_id = $1::uuid order by id desc`,
      [incident.id],
    ),
    db.query<{ n: number }>(
      `select count(*)::int as n from incident_failures where incident_id = $1::uuid and replay_delivery_id is null and recovered_at is null`,
      [incident.id],
    ),
    db.query<{ id: string }>(`select id from replay_batches where incident_id = $1::uuid order by id desc limit 1`, [incident.id]),
  ]);
  return {
    ...presentIncident(incident),
    // what POST .../replay would queue at most (the dashboard's duration estimate)
    unreplayed_count: unreplayed.rows[0].n,
    // the newest replay batch (GET /v1/replay-batches/:id), so its progress can be followed after a reload
    latest_replay_batch_id: batch.rows[0]?.id ?? null,
    failures: failures.rows.map(presentFailure),
    updates: updates.rows.map((u) => ({ id: u.id, body: u.body, is_system: u.is_system, author_id: u.author_id, created_at: iso(u.created_at) })),
  };
}

/** A member's note on the incident's timeline (is_system false); undefined when the incident is not the organization's. */
export async function addNote(db: Db, organizationId: string, incidentId: string, body: string, memberId: string) {
  return db.transaction(async (tx) => {
    const incident = await findIncident(tx, organizationId, incidentId, { lock: true });
    if (!incident) return undefined;
    const update = await addUpdate(tx, { organizationId, incidentId, body, authorId: memberId });
    await announceIncident(tx, organizationId, incidentId, { type: 'incident.updated', change: 'note', update });
    return update;
  });
}

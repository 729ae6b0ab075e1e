import { createHash } from 'node:crypto';
import type { Queryable } from '../db/db.ts';
import { newId } from '../db/ids.ts';

/**
 * Who the service is when it acts by itself: the author of system updates
 * and `resolved_by` of an automatic resolution. The nil UUID, so the field
 * is a uuid whoever acted; a member is identified by their member id.
 */
export const SYSTEM_ACTOR_ID = '00000000-0000-0000-0000-000000000000';

export type IncidentStatus = 'open' | 'investigating' | 'resolved';
export const INCIDENT_STATUSES: readonly IncidentStatus[] = ['open', 'investigating', 'resolved'];

export interface IncidentRow {
  id: string;
  organization_id: string;
  status: IncidentStatus;
  scope: string;
  scope_key: string;
  destination_id: string | null;
  destination_name: string | null;
  destination_url: string | null;
  asn: string | number | null;
  asn_org: string | null;
  asn_destination_count: number;
  likely_cause: string;
  failure_count: number;
  endpoint_count: number;
  first_failure_at: Date;
  last_failure_at: Date;
  is_recurring: boolean;
  previous_incident_id: string | null;
  investigating_at: Date | null;
  resolved_at: Date | null;
  resolved_by: string | null;
  created_at: Date;
  updated_at: Date;
}

export const INCIDENT_COLUMNS = `id, organization_id, status, scope, scope_key, destination_id, destination_name, destination_url, asn, asn_org,
  asn_destination_count, likely_cause, failure_count, endpoint_count, first_failure_at, last_failure_at, is_recurring,
  previous_incident_id, investigating_at, resolved_at, resolved_by, created_at, updated_at`;

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

/** The specification's Incident object (plus the ASN outage count and the destination URL, documented in docs/incidents.md). */
export function presentIncident(r: IncidentRow) {
  return {
    id: r.id,
    status: r.status,
    scope: r.scope,
    destination_id: r.destination_id,
    destination_name: r.destination_name,
    destination_url: r.destination_url,
    asn: r.asn === null ? null : Number(r.asn),
    asn_org: r.asn_org,
    asn_destination_count: r.asn_destination_count,
    likely_cause: r.likely_cause,
    failure_count: r.failure_count,
    endpoint_count: r.endpoint_count,
    first_failure_at: iso(r.first_failure_at),
    last_failure_at: iso(r.last_failure_at),
    is_recurring: r.is_recurring,
    previous_incident_id: r.previous_incident_id,
    investigating_at: iso(r.investigating_at),
    resolved_at: iso(r.resolved_at),
    resolved_by: r.resolved_by,
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
  };
}

/**
 * The destination id of an endpoint's forward_url, which has no row of its
 * own: a name-based UUID (version 5: a SHA-1 of the organization and the
 * URL), so every failure to that URL, on every
 * endpoint of the organization and every node, gets the same id.
 */
export function forwardUrlDestinationId(organizationId: string, url: string): string {
  const h = createHash('sha1').update(`weir:forward_url:${organizationId}:${url}`).digest('hex');
  const variant = ((parseInt(h[16], 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** The destination id of a failure or incident: the forward destination, or the forward_url's derived id. */
export function destinationIdOf(organizationId: string, forwardDestinationId: string | null, destinationUrl: string): string {
  return forwardDestinationId ?? forwardUrlDestinationId(organizationId, destinationUrl);
}

export async function addUpdate(
  db: Queryable,
  u: { organizationId: string; incidentId: string; body: string; authorId?: string },
): Promise<{ id: string; body: string; is_system: boolean; author_id: string; created_at: string }> {
  const isSystem = u.authorId === undefined;
  const { rows } = await db.query<{ id: string; body: string; is_system: boolean; author_id: string; created_at: Date }>(
    `insert into incident_updates (id, organization_id, incident_id, body, is_system, author_id)
     values ($1::uuid, $2::uuid, $3::uuid, $4, $5, $6::uuid)
     returning id, body, is_system, author_id, created_at`,
    [newId(), u.organizationId, u.incidentId, u.body, isSystem, u.authorId ?? SYSTEM_ACTOR_ID],
  );
  return { ...rows[0], created_at: new Date(rows[0].created_at).toISOString() };
}

export async function findIncident(db: Queryable, organizationId: string, id: string, opts: { lock?: boolean } = {}): Promise<IncidentRow | undefined> {
  const { rows } = await db.query<IncidentRow>(
    `select ${INCIDENT_COLUMNS} from incidents where id = $1::uuid and organization_id = $2::uuid${opts.lock ? ' for update' : ''}`,
    [id, organizationId],
  );
  return rows[0];
}

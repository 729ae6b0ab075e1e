import type { Db } from '../db/db.ts';
import { succeededSince } from '../delivery/replay-batch.ts';
import { announceIncident } from './events.ts';
import { addUpdate, findIncident, INCIDENT_COLUMNS, SYSTEM_ACTOR_ID, type IncidentRow, type IncidentStatus } from './store.ts';

/**
 * An incident's status: members move it with PATCH (any state to any
 * state, as the specification's table allows), the system resolves it once
 * its destination works again. Every change is told in a system update.
 */

/** How long a destination must go without a new failure, having succeeded again, before its incident resolves by itself. */
export const QUIET_PERIOD_MS = 10 * 60_000;

export type StatusChange = { ok: true; incident: IncidentRow } | { ok: false; reason: 'not_found' };

/**
 * Sets an incident's status for a member: `investigating_at` is set on the
 * first move to investigating and kept; resolving sets `resolved_at` and
 * `resolved_by` (the member); reopening clears both. Setting the current
 * status again changes nothing and writes no update.
 */
export async function setIncidentStatus(db: Db, organizationId: string, id: string, status: IncidentStatus, memberId: string): Promise<StatusChange> {
  return db.transaction(async (tx) => {
    const current = await findIncident(tx, organizationId, id, { lock: true });
    if (!current) return { ok: false, reason: 'not_found' } as const;
    if (current.status === status) return { ok: true, incident: current } as const;
    const { rows } = await tx.query<IncidentRow>(
      `update incidents
          set status = $2,
              investigating_at = case when $2 = 'investigating' then coalesce(investigating_at, now()) else investigating_at end,
              resolved_at = case when $2 = 'resolved' then now() end,
              resolved_by = case when $2 = 'resolved' then $3::uuid end,
              updated_at = now()
        where id = $1::uuid
        returning ${INCIDENT_COLUMNS}`,
      [id, status, memberId],
    );
    await addUpdate(tx, { organizationId, incidentId: id, body: `Status changed from ${current.status} to ${status} by member ${memberId}.` });
    await announceIncident(
      tx,
      organizationId,
      id,
      status === 'resolved' ? { type: 'incident.resolved', previousStatus: current.status } : { type: 'incident.updated', change: 'status', previousStatus: current.status },
    );
    return { ok: true, incident: rows[0] } as const;
  });
}

/**
 * Resolves, as the system, every unresolved incident whose destination has
 * answered 2xx since its last failure, has had no new failure for the
 * quiet period, and has no delivery still waiting for a retry. The update checks the quiet period again, so a failure
 * correlated meanwhile keeps the incident open. Returns the ids resolved.
 */
export async function resolveRecovered(db: Db, opts: { quietMs?: number } = {}): Promise<string[]> {
  const quietMs = opts.quietMs ?? QUIET_PERIOD_MS;
  const { rows } = await db.query<IncidentRow & { endpoint_ids: string[] | null }>(
    `select i.*,
            -- a forward_url is found through its endpoints' deliveries; a forward destination by its own id
            case when i.scope_key like 'url:%'
                 then (select array_agg(distinct endpoint_id) from incident_failures f where f.incident_id = i.id) end as endpoint_ids
       from incidents i
      where i.status <> 'resolved' and i.last_failure_at < now() - $1 * interval '1 millisecond'
        -- a delivery still retrying keeps its incident open (a retry overdue by more than the quiet period no longer counts: its delivery ended unattempted)
        and not exists (select 1 from incident_failures f
                         where f.incident_id = i.id and f.next_attempt_at is not null and f.recovered_at is null
                           and f.next_attempt_at > now() - $1 * interval '1 millisecond')`,
    [quietMs],
  );
  const resolved: string[] = [];
  for (const r of rows) {
    const forwardDestinationId = r.scope_key.startsWith('fd:') ? r.scope_key.slice(3) : null;
    const target = { forwardDestinationId, url: r.destination_url, endpointIds: r.endpoint_ids ?? [] };
    if (!(await succeededSince(db, target, new Date(r.last_failure_at)))) continue;
    const done = await db.transaction(async (tx) => {
      const { rowCount } = await tx.query(
        `update incidents set status = 'resolved', resolved_at = now(), resolved_by = $2::uuid, updated_at = now()
          where id = $1::uuid and status <> 'resolved' and last_failure_at < now() - $3 * interval '1 millisecond'`,
        [r.id, SYSTEM_ACTOR_ID, quietMs],
      );
      if (rowCount === 0) return false;
      const minutes = Math.round(quietMs / 60_000);
      await addUpdate(tx, {
        organizationId: r.organization_id,
        incidentId: r.id,
        body: `Resolved automatically: ${r.destination_name ?? 'the destination'} answers successfully again and no forward has failed for ${minutes >= 1 ? `${minutes} minute${minutes === 1 ? '' : 's'}` : `${Math.round(quietMs / 1000)} s`}.`,
      });
      await announceIncident(tx, r.organization_id, r.id, { type: 'incident.resolved', previousStatus: r.status });
      return true;
    });
    if (done) resolved.push(r.id);
  }
  return resolved;
}

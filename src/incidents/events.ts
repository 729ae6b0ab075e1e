import type { Queryable } from '../db/db.ts';
import { emitEvent } from '../subscriptions/emit.ts';
import { findIncident, presentIncident } from './store.ts';

/**
 * Incident events for subscriptions (docs/subscriptions.md), queued in the
 * transaction that changes the incident, with the incident as
 * GET /v1/incidents/:id shows it after the change (without its failures and
 * updates lists: the update that caused the event travels beside it).
 */
export type IncidentChange =
  | { type: 'incident.opened' }
  | { type: 'incident.resolved'; previousStatus: string }
  | { type: 'incident.updated'; change: 'status'; previousStatus: string }
  | { type: 'incident.updated'; change: 'cause'; previousCause: string }
  | { type: 'incident.updated'; change: 'note'; update: unknown };

export async function announceIncident(tx: Queryable, organizationId: string, incidentId: string, c: IncidentChange): Promise<void> {
  await emitEvent(tx, {
    organizationId,
    type: c.type,
    data: async () => {
      const incident = await findIncident(tx, organizationId, incidentId);
      const object = incident ? presentIncident(incident) : { id: incidentId };
      if (c.type === 'incident.opened') return { object };
      if (c.type === 'incident.resolved') return { object, previous: { status: c.previousStatus } };
      if (c.change === 'status') return { object, change: 'status', previous: { status: c.previousStatus } };
      if (c.change === 'cause') return { object, change: 'cause', previous: { likely_cause: c.previousCause } };
      return { object, change: 'note', update: c.update };
    },
  });
}

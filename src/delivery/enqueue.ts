import { notify, type Queryable } from '../db/db.ts';
import type { DestinationType } from './transport.ts';

/** The channel workers LISTEN on; one notification per committed batch of new deliveries. */
export const DELIVERY_CHANNEL = 'weir_deliveries';

/** Where one endpoint forwards to right now. */
export interface ForwardTarget {
  endpointId: string;
  /** null: the endpoint's forward_url. */
  forwardDestinationId: string | null;
  destinationType: DestinationType;
  url: string | null;
  agentId: string | null;
  enabled: boolean;
}

/**
 * The targets of some endpoints: the forward_url first (when set), then the
 * forward destinations in sort_order. Disabled destinations are included
 * only when asked, for a replay that names one. New captures get their
 * deliveries by the same rule inside the capture statement itself
 * (src/ingest/store.ts), which must be kept in step with this one.
 */
export async function forwardTargets(db: Queryable, endpointIds: readonly string[], opts: { includeDisabled?: boolean } = {}): Promise<ForwardTarget[]> {
  const { rows } = await db.query<{
    endpoint_id: string;
    forward_destination_id: string | null;
    destination_type: DestinationType;
    url: string | null;
    agent_id: string | null;
    enabled: boolean;
  }>(
    `select e.id as endpoint_id, null::uuid as forward_destination_id, 'https' as destination_type,
            e.forward_url as url, null::uuid as agent_id, true as enabled, -1 as sort_order
       from endpoints e
      where e.id = any($1::uuid[]) and e.forward_url is not null
     union all
     select fd.endpoint_id, fd.id, fd.destination_type, fd.url, fd.agent_id, fd.enabled, fd.sort_order
       from forward_destinations fd
      where fd.endpoint_id = any($1::uuid[]) and (fd.enabled or $2::boolean)
     order by endpoint_id, sort_order, forward_destination_id nulls first`,
    [endpointIds, opts.includeDisabled ?? false],
  );
  return rows.map((r) => ({
    endpointId: r.endpoint_id,
    forwardDestinationId: r.forward_destination_id,
    destinationType: r.destination_type,
    url: r.url,
    agentId: r.agent_id,
    enabled: r.enabled,
  }));
}

export interface NewDelivery {
  id: string;
  organizationId: string;
  requestId: string;
  requestReceivedAt: Date;
  target: ForwardTarget;
  replayBatchId: string | null;
  /** A single-request replay that skips the destination's filter (docs/routing.md). */
  ignoreFilter?: boolean;
}

/** Inserts deliveries (due now) in one statement; the caller notifies. */
export async function insertDeliveries(tx: Queryable, rows: readonly NewDelivery[]): Promise<void> {
  if (rows.length === 0) return;
  await tx.query(
    `insert into deliveries (id, organization_id, request_id, request_received_at, endpoint_id,
                             forward_destination_id, destination_type, url, agent_id, replay_batch_id, ignore_filter)
     select * from unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::timestamptz[], $5::uuid[],
                          $6::uuid[], $7::text[], $8::text[], $9::uuid[], $10::uuid[], $11::boolean[])`,
    [
      rows.map((r) => r.id),
      rows.map((r) => r.organizationId),
      rows.map((r) => r.requestId),
      rows.map((r) => r.requestReceivedAt.toISOString()),
      rows.map((r) => r.target.endpointId),
      rows.map((r) => r.target.forwardDestinationId),
      rows.map((r) => r.target.destinationType),
      rows.map((r) => r.target.url),
      rows.map((r) => r.target.agentId),
      rows.map((r) => r.replayBatchId),
      rows.map((r) => r.ignoreFilter ?? false),
    ],
  );
}

export function wakeWorkers(tx: Queryable): Promise<void> {
  return notify(tx, DELIVERY_CHANNEL, '');
}

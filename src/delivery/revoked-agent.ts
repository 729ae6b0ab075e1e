import type { Queryable } from '../db/db.ts';

/** last_error of a delivery ended because its agent was revoked. */
export const AGENT_REVOKED_ERROR = 'the agent was revoked: it can never connect again, so this delivery will not be sent. Replay the request to another destination.';
const BATCH = 1_000;

/**
 * Ends the deliveries a revoked agent still owes: `failed` with
 * AGENT_REVOKED_ERROR, and one incident failure each (error_class
 * `agent_revoked`),
 * exactly as a final failed attempt records it (src/incidents/record.ts),
 * so they are counted in incidents and can be replayed to another
 * destination. Without this they wait forever: the claim only hands an
 * agent's deliveries to its connected link, and a revoked agent never
 * connects again.
 *
 * Waiting and in-flight ones both: an in-flight delivery's lease id is
 * cleared, so the link closing (which gives leases back) or a late answer
 * of the agent (recorded by lease id) cannot bring it back.
 *
 * `agentId` for one agent (inside its revocation's transaction); null for
 * every revoked agent (the sweep, for deliveries queued after the
 * revocation through a destination that still names the agent). At most
 * `limit` deliveries a call, taken with SKIP LOCKED, so nodes sweeping at
 * once share the work; returns how many it ended.
 *
 * The incident failure's id is time-ordered like newId(): the clock's
 * milliseconds over the first 48 bits of a random UUID, so the correlator
 * (which takes failures in id order) sees them in the order they happened.
 */
export async function failRevokedAgentDeliveries(db: Queryable, agentId: string | null, limit = BATCH): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `with stranded as (
       select d.id from deliveries d join agents a on a.id = d.agent_id
        where d.destination_type = 'agent' and d.status in ('pending', 'in_flight')
          and a.revoked_at is not null and ($1::uuid is null or d.agent_id = $1::uuid)
        limit $2
          for update of d skip locked
     ),
     moved as (
       update deliveries d
          set status = 'failed', paced_slot = null, lease_until = null, leased_by = null, lease_id = null,
              last_error = $3, last_status_code = null, updated_at = now()
         from stranded s where d.id = s.id
       returning d.*
     ),
     failure as (
       insert into incident_failures (id, organization_id, delivery_id, request_id, request_received_at, endpoint_id, forward_destination_id,
                                      destination_type, agent_id, scope_key, destination_url, status_code, error_class, error, failed_at)
       select encode(overlay(uuid_send(gen_random_uuid())
                             placing substring(int8send((extract(epoch from clock_timestamp()) * 1000)::bigint) from 3) from 1 for 6), 'hex')::uuid,
              m.organization_id, m.id, m.request_id, m.request_received_at, m.endpoint_id, m.forward_destination_id,
              m.destination_type, m.agent_id,
              case when m.forward_destination_id is not null then 'fd:' || m.forward_destination_id::text else 'url:' || m.agent_id::text end,
              'agent://' || m.agent_id::text, null, 'agent_revoked', $3, now()
         from moved m
       on conflict (organization_id, request_id, scope_key) do nothing
     )
     select count(*)::int as n from moved`,
    [agentId, limit, AGENT_REVOKED_ERROR],
  );
  return rows[0].n;
}

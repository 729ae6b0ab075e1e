import type { Db, Queryable } from '../db/db.ts';
import { agentRetry, DEFAULT_RETRY } from './retry-policy.ts';
import type { ClaimedDelivery, DestinationType } from './transport.ts';

/**
 * A paced delivery whose slot is at most this far ahead is claimed now and
 * the worker waits for the slot in memory; a later slot is written back as
 * next_attempt_at and claimed when it comes due. Short enough that a crash
 * loses little, long enough that a fast rate (1000/s) is served in batches.
 */
export const PACING_HORIZON_MS = 1000;

export interface ClaimOptions {
  destinationType: DestinationType;
  /** Only deliveries to these agents (the agents connected to this node); null for every one. */
  agentIds?: readonly string[] | null;
  limit: number;
  leaseMs: number;
  /** Who holds the lease, for operators reading the table. */
  node: string;
}

interface ClaimRow {
  id: string;
  lease_id: string | null;
  status: string;
  organization_id: string;
  request_id: string;
  endpoint_id: string;
  forward_destination_id: string | null;
  destination_type: DestinationType;
  url: string | null;
  agent_id: string | null;
  attempt_count: number;
  paced_slot: Date | null;
  capture_id: string | null;
  method: string | null;
  path: string | null;
  query: string | null;
  headers: Array<[string, string]> | null;
  body_hex: string | null;
  enabled: boolean | null;
  method_override: string | null;
  retry_enabled: boolean | null;
  retry_schedule: number[] | null;
  intelligent_retry: boolean | null;
  target_port: number | null;
  target_path: string | null;
  agent_environment: 'production' | 'development' | null;
  db_now: Date;
}

/**
 * Claims up to `limit` due deliveries in ONE statement, so a claim is atomic
 * and several workers on several nodes never take the same row:
 * - `next` locks the oldest due rows, skipping rows another claim holds
 *   (SKIP LOCKED: claimers never wait on each other);
 * - `need`/`taken`/`slots` give each delivery of a rate-limited destination
 *   the next dispatch slots of that destination, advancing its
 *   destination_pacing row (the upsert's row lock serialises nodes, so slots
 *   are globally unique and evenly spaced);
 * - `claimed` leases what can go now (unpaced, or a slot within the
 *   horizon) and writes the rest back as pending until their slot, which
 *   also moves them out of the way of other destinations' deliveries;
 * - the final select joins the capture (exact bytes) and the destination's
 *   current settings for the leased rows.
 * Returns the leased deliveries; rescheduled ones are only counted.
 */
export async function claimDeliveries(db: Db, o: ClaimOptions): Promise<{ claimed: ClaimedDelivery[]; rescheduled: number }> {
  return db.transaction(async (tx) => {
    // A queue table misleads the planner: statistics (PostgreSQL's taken
    // while the queue was empty, PGlite's none at all) say almost nothing is
    // pending, so it reads every due row and sorts them: a cost growing with
    // the backlog exactly when a backlog builds. Only the ordered scan of
    // deliveries_due is allowed here; it stops after `limit` rows.
    await tx.exec('set local enable_seqscan = off; set local enable_bitmapscan = off');
    return claimIn(tx, o);
  });
}

async function claimIn(db: Queryable, o: ClaimOptions): Promise<{ claimed: ClaimedDelivery[]; rescheduled: number }> {
  const sentAt = Date.now();
  const { rows } = await db.query<ClaimRow>(
    `with next as materialized (
       -- deliveries alone, so the scan walks deliveries_due in order and stops at the limit
       select d.id, d.forward_destination_id, d.paced_slot, d.next_attempt_at, d.replay_batch_id
         from deliveries d
        where d.status = 'pending' and d.next_attempt_at <= now()
          and d.destination_type = $1 and ($2::uuid[] is null or d.agent_id = any($2::uuid[]))
        order by d.next_attempt_at
        limit $3
          for update skip locked
     ),
     need as (
       select next.id, next.forward_destination_id as dest, fd.rate_limit_per_minute as rate,
              row_number() over (partition by next.forward_destination_id order by next.next_attempt_at, next.id) as k,
              count(*) over (partition by next.forward_destination_id) as n
         from next
         join forward_destinations fd on fd.id = next.forward_destination_id
        where fd.rate_limit_enabled and fd.rate_limit_per_minute is not null and next.paced_slot is null
          -- a paced replay batch's own rate applies instead (bneed)
          and not exists (select 1 from replay_batch_pacing rp where rp.replay_batch_id = next.replay_batch_id)
     ),
     taken as (
       insert into destination_pacing as p (destination_id, next_slot_at)
       select dest, now() + max(n) * (interval '60 seconds' / max(rate)) from need group by dest
       on conflict (destination_id) do update
         set next_slot_at = greatest(p.next_slot_at, now()) + (excluded.next_slot_at - now())
       returning destination_id, next_slot_at
     ),
     slots as (
       select need.id, taken.next_slot_at - (need.n - need.k + 1) * (interval '60 seconds' / need.rate) as slot
         from need join taken on taken.destination_id = need.dest
     ),
     -- the same for incident replay batches, paced at their requests_per_minute (src/incidents/replay.ts)
     bneed as (
       select next.id, next.replay_batch_id as batch, rp.requests_per_minute as rate,
              row_number() over (partition by next.replay_batch_id order by next.next_attempt_at, next.id) as k,
              count(*) over (partition by next.replay_batch_id) as n
         from next join replay_batch_pacing rp on rp.replay_batch_id = next.replay_batch_id
        where next.paced_slot is null
     ),
     btaken as (
       update replay_batch_pacing rp
          set next_slot_at = greatest(rp.next_slot_at, now()) + b.n * (interval '60 seconds' / rp.requests_per_minute)
         from (select batch, max(n) as n from bneed group by batch) b
        where rp.replay_batch_id = b.batch
       returning rp.replay_batch_id, rp.next_slot_at
     ),
     bslots as (
       select bneed.id, btaken.next_slot_at - (bneed.n - bneed.k + 1) * (interval '60 seconds' / bneed.rate) as slot
         from bneed join btaken on btaken.replay_batch_id = bneed.batch
     ),
     plan as (
       select next.id, coalesce(s.slot, bs.slot, next.paced_slot) as slot,
              coalesce(s.slot, bs.slot, next.paced_slot, now()) <= now() + $4 * interval '1 millisecond' as go
         from next left join slots s on s.id = next.id left join bslots bs on bs.id = next.id
     ),
     claimed as (
       update deliveries d
          set status = case when plan.go then 'in_flight' else 'pending' end,
              paced_slot = plan.slot,
              next_attempt_at = case when plan.go then d.next_attempt_at else plan.slot end,
              lease_until = case when plan.go then greatest(coalesce(plan.slot, now()), now()) + $5 * interval '1 millisecond' end,
              leased_by = case when plan.go then $6 end,
              lease_id = case when plan.go then gen_random_uuid() end,
              updated_at = now()
         from plan
        where d.id = plan.id
        returning d.*
     )
     select c.id, c.lease_id, c.status, c.organization_id, c.request_id, c.endpoint_id, c.forward_destination_id,
            c.destination_type, c.url, c.agent_id, c.attempt_count, c.paced_slot,
            -- hex text, decoded natively below: PGlite's bytea parser works byte by byte in JavaScript
            cr.id as capture_id, cr.method, cr.path, cr.query, cr.headers, encode(cr.body, 'hex') as body_hex,
            fd.enabled, fd.method_override, fd.retry_enabled, fd.retry_schedule, fd.intelligent_retry,
            -- agent deliveries: the target as it is now, and the agent's environment as downgraded by the destination
            fd.target_port, fd.target_path, coalesce(fd.environment_override, a.environment) as agent_environment,
            statement_timestamp() as db_now
       from claimed c
       -- a range, not equality: received_at may carry microseconds the
       -- millisecond copy in the delivery row lost; the id pins the row
       left join captured_requests cr
              on c.status = 'in_flight' and cr.id = c.request_id
             and cr.received_at between c.request_received_at - interval '1 millisecond'
                                    and c.request_received_at + interval '1 millisecond'
       left join forward_destinations fd on fd.id = c.forward_destination_id
       left join agents a on a.id = c.agent_id`,
    [o.destinationType, o.agentIds ?? null, o.limit, PACING_HORIZON_MS, o.leaseMs, o.node],
  );
  if (rows.length === 0) return { claimed: [], rescheduled: 0 };
  // The database's clock hands out slots; convert them to this process's
  // clock, pairing the statement's start there with when it was sent here.
  const skew = new Date(rows[0].db_now).getTime() - sentAt;
  const claimed: ClaimedDelivery[] = [];
  for (const r of rows) {
    if (r.status !== 'in_flight') continue;
    claimed.push({
      id: r.id,
      leaseId: r.lease_id!,
      organizationId: r.organization_id,
      requestId: r.request_id,
      endpointId: r.endpoint_id,
      forwardDestinationId: r.forward_destination_id,
      destinationType: r.destination_type,
      url: r.url,
      agentId: r.agent_id,
      attemptNumber: r.attempt_count + 1,
      sendAt: r.paced_slot ? new Date(r.paced_slot).getTime() - skew : 0,
      capture: r.capture_id
        ? { id: r.capture_id, method: r.method!, path: r.path ?? '', query: r.query ?? '', headers: r.headers ?? [], body: Buffer.from(r.body_hex ?? '', 'hex') }
        : null,
      // the forward_url has no row: it is always enabled, with the default retry settings
      enabled: r.forward_destination_id === null ? true : r.enabled === true,
      methodOverride: r.method_override,
      targetPort: r.target_port,
      targetPath: r.target_path,
      agentEnvironment: r.agent_environment,
      retry:
        r.destination_type === 'agent'
          ? agentRetry(r.agent_environment)
          : r.forward_destination_id === null || r.retry_enabled === null
            ? DEFAULT_RETRY
            : { retryEnabled: r.retry_enabled, schedule: r.retry_schedule ?? [], intelligent: r.intelligent_retry ?? true },
    });
  }
  // The update returns rows in no particular order; a delivery id starts
  // with its capture's id, so this launches a batch in capture order (an
  // agent forwards each destination's deliveries in the order it gets them).
  claimed.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { claimed, rescheduled: rows.length - claimed.length };
}

/**
 * Puts deliveries whose lease ran out (their worker died or hung) back in
 * the queue, due now. The interrupted attempt's outcome is unknown, so it
 * may have reached the destination: this is where at-least-once can become
 * twice, and why every forward carries a stable webhook-id. A paced
 * delivery gives up its slot and takes a new one, keeping the spacing.
 */
export async function requeueExpiredLeases(db: Queryable, opts: { everyLease?: boolean } = {}): Promise<number> {
  const { rowCount } = await db.query(
    `update deliveries
        set status = 'pending', next_attempt_at = now(), paced_slot = null,
            lease_until = null, leased_by = null, lease_id = null,
            last_error = 'lease expired: the worker stopped before recording an outcome', updated_at = now()
      where id in (select id from deliveries where status = 'in_flight' and ($1::boolean or lease_until < now())
                    for update skip locked)`,
    [opts.everyLease ?? false],
  );
  return rowCount;
}

/**
 * Gives back leases this worker will not finish (shutdown): due again now, for
 * any node. `keepDue` keeps their due time instead, so they stay ahead of
 * deliveries queued after them (an agent link that dropped: what it had in
 * flight goes first when the agent returns).
 */
export async function releaseLeases(db: Queryable, leaseIds: readonly string[], opts: { keepDue?: boolean } = {}): Promise<number> {
  if (leaseIds.length === 0) return 0;
  const { rowCount } = await db.query(
    `update deliveries
        set status = 'pending', next_attempt_at = case when $2::boolean then least(next_attempt_at, now()) else now() end, paced_slot = null,
            lease_until = null, leased_by = null, lease_id = null, updated_at = now()
      where lease_id = any($1::uuid[]) and status = 'in_flight'`,
    [leaseIds, opts.keepDue ?? false],
  );
  return rowCount;
}

/**
 * When the earliest waiting delivery of this type (of these agents, for an
 * agent worker) comes due (a retry or a paced slot), in this process's clock.
 * Filtered like the claim: a disconnected agent's waiting deliveries are due
 * but not this worker's, and must not wake it again and again.
 */
export async function nextDueAt(db: Queryable, destinationType: DestinationType, agentIds: readonly string[] | null = null): Promise<number | null> {
  const { rows } = await db.query<{ at: Date | null; db_now: Date }>(
    `select (select min(next_attempt_at) from deliveries where status = 'pending' and destination_type = $1
                and ($2::uuid[] is null or agent_id = any($2::uuid[]))) as at, now() as db_now`,
    [destinationType, agentIds],
  );
  const r = rows[0];
  if (!r?.at) return null;
  return new Date(r.at).getTime() - (new Date(r.db_now).getTime() - Date.now());
}

/**
 * Gives back every lease, whoever holds it: only for a database no other
 * process can be using (PGlite behind its data-directory lock), at start,
 * before this process claims anything. Leases found then were held by a
 * process that died (kill -9, a crash, a power cut), and its forwards go
 * again at once instead of after the lease expires.
 */
export function releaseOrphanedLeases(db: Queryable): Promise<number> {
  return requeueExpiredLeases(db, { everyLease: true });
}

/**
 * Extends leases a live worker still holds: an agent's deliveries may wait
 * on its link (one destination's forwards go one at a time) longer than one
 * lease, and must not be handed out twice while the link is healthy.
 */
export async function renewLeases(db: Queryable, leaseIds: readonly string[], leaseMs: number): Promise<number> {
  if (leaseIds.length === 0) return 0;
  const { rowCount } = await db.query(
    `update deliveries set lease_until = now() + $2 * interval '1 millisecond'
      where lease_id = any($1::uuid[]) and status = 'in_flight'`,
    [leaseIds, leaseMs],
  );
  return rowCount;
}

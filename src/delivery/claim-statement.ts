// The claim statements, each written out whole: claimDeliveries (claim.ts)
// picks one and explains each step. They differ only in where `next` finds
// due deliveries (every due one of a type, or the connected agents' own)
// and in whether replay batch pacing is in (the bneed/btaken/bslots CTEs,
// and bslots in `plan`). test/delivery/claim-statements.test.ts runs the
// same checks on all four, so they cannot drift apart unnoticed.
//
// Parameters: $1 the destination type (CLAIM_DUE*) or the connected
// agents' ids (CLAIM_DUE_OF_AGENTS*), $2 limit, $3 pacing horizon ms,
// $4 lease ms, $5 node, $6 the claim's lease seed (LEASE_ID, below).
import { leaseIdSql } from './lease-id.ts';
import type { DestinationType } from './transport.ts';

/** A row of the claim statement: the claimed delivery, its capture and its destination as they are now. */
export interface ClaimRow {
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
  /**
   * Times as epoch milliseconds, float8 from the exact numeric (so the
   * whole milliseconds are exact, as a Date parsed from the timestamp's
   * text has them): both drivers parse a timestamptz's text into a Date for
   * every row, a float8 is one parseFloat (docs/forwarding.md).
   */
  paced_slot_ms: number | null;
  replay_batch_id: string | null;
  capture_id: string | null;
  method: string | null;
  path: string | null;
  query: string | null;
  headers: Array<[string, string]> | null;
  body: Buffer | null;
  verification_status: 'verified' | 'failed' | null;
  enabled: boolean | null;
  method_override: string | null;
  retry_enabled: boolean | null;
  retry_schedule: number[] | null;
  intelligent_retry: boolean | null;
  target_port: number | null;
  target_path: string | null;
  agent_environment: 'production' | 'development' | null;
  /** Routing (src/routing): the version of the destination's filter now (null: it has none), and whether this delivery skips it. */
  filter_version: string | null;
  ignore_filter: boolean;
  transformation: { code: string } | null;
  request_received_ms: number | null;
  db_now_ms: number;
  /** only in the statement with batch pacing */
  paced_batches?: boolean;
}

/*
 * ORDER. Every claim ends with `order by c.next_attempt_at, c.id`: the
 * worker launches the rows in the order they come, due time first, then id
 * (a capture's deliveries start with its id), whatever the joins after the
 * update did to the order of `claimed` (a generic plan hashes them; db.ts,
 * QueryOptions.name).
 */

/*
 * Why two statements per kind of claim. Replay batch pacing costs every
 * claim several steps (a window over the claimed rows, a lookup of each in
 * replay_batch_pacing, an update) although batches are rare, so while none
 * is paced the statement without them runs. Which one to run is a hint
 * from the last claim, never trusted for correctness: the statement
 * without batch pacing claims nothing at all when replay_batch_pacing has
 * a row (`next`'s one-time guard, read in the statement's own snapshot,
 * which is the snapshot its scan of deliveries uses). A batch inserts its
 * pacing row in the transaction that inserts its deliveries
 * (queuePacedBatch), so a statement that can see a batch's deliveries sees
 * its pacing row too, whichever node created the batch; the caller then
 * runs the statement with batch pacing.
 */

/**
 * How late a paced slot may be and still be used. A slot is a dispatch
 * time; one that passed longer ago than this (every node stopped or
 * starved: a paused VM, a long GC, a stalled database) is given up and the
 * delivery takes the next free slot, at the end of the line, as a retry
 * does. Sending late slots at once instead sent everything that fell due
 * during the stall in one burst, on top of the slots that followed on time:
 * a 2 s stop of both nodes put 21 extra forwards into a minute at 600/min
 * (bench:rate-limit). So a forward leaves within this much of its slot, and
 * a destination gets at most rate × (1 + PACING_LATE_MS / 60 s) + 2 in any
 * minute (docs/forwarding.md, Smooth rate limiting).
 * Far above a claim's usual lateness (milliseconds; the wake-up and the
 * claim's round trip), so normally no slot is given up. The worker applies
 * the same bound to a slot it waited for in memory (worker.ts).
 */
export const PACING_LATE_MS = 500;

/** A claimed row's lease id, from the claim's seed ($6): leaseIdSql. */
const LEASE_ID = leaseIdSql('$6', 'd.id');

/** Whether a claimed delivery takes a new slot: it has none, or its slot is too late to use (PACING_LATE_MS). */
const NEEDS_SLOT = `(next.paced_slot is null or next.paced_slot < now() - interval '${PACING_LATE_MS} milliseconds')`;

/** Claims due deliveries of one destination type ($1), walking deliveries_due in order; no replay batch may be paced. */
export const CLAIM_DUE = `with next as materialized (
       -- deliveries alone, so the scan walks deliveries_due in order and stops at the limit
       select d.id, d.forward_destination_id, d.paced_slot, d.next_attempt_at
         from deliveries d
        where d.status = 'pending' and d.next_attempt_at <= now() and d.destination_type = $1
          -- evaluated once per statement: with a paced batch, claim nothing (the caller claims again with batch pacing)
          and not exists (select 1 from replay_batch_pacing)
        order by d.next_attempt_at
        limit $2
          for update skip locked
     ),
     need as (
       select next.id, next.forward_destination_id as dest, fd.rate_limit_per_minute as rate,
              row_number() over (partition by next.forward_destination_id order by next.next_attempt_at, next.id) as k,
              count(*) over (partition by next.forward_destination_id) as n
         from next
         join forward_destinations fd on fd.id = next.forward_destination_id
        where fd.rate_limit_enabled and fd.rate_limit_per_minute is not null and ${NEEDS_SLOT}
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
     plan as (
       select next.id, coalesce(s.slot, next.paced_slot) as slot,
              coalesce(s.slot, next.paced_slot, now()) <= now() + $3 * interval '1 millisecond' as go
         from next left join slots s on s.id = next.id
     ),
     claimed as (
       update deliveries d
          set status = case when plan.go then 'in_flight' else 'pending' end,
              paced_slot = plan.slot,
              next_attempt_at = case when plan.go then d.next_attempt_at else plan.slot end,
              lease_until = case when plan.go then greatest(coalesce(plan.slot, now()), now()) + $4 * interval '1 millisecond' end,
              leased_by = case when plan.go then $5 end,
              lease_id = case when plan.go then ${LEASE_ID} end,
              updated_at = now()
         from plan
        where d.id = plan.id
        returning d.*
     )
     select c.id, c.lease_id, c.status, c.organization_id, c.request_id, c.endpoint_id, c.forward_destination_id,
            c.destination_type, c.url, c.agent_id, c.attempt_count, (extract(epoch from c.paced_slot) * 1000)::float8 as paced_slot_ms, c.replay_batch_id,
            -- the body as bytea: PGlite's named statements fetch it in binary (src/db/pglite.ts), node-postgres decodes its hex natively
            cr.id as capture_id, cr.method, cr.path, cr.query, cr.headers, cr.body, cr.verification_status,
            fd.enabled, fd.method_override, fd.retry_enabled, fd.retry_schedule, fd.intelligent_retry,
            -- agent deliveries: the target as it is now, and the agent's environment as downgraded by the destination
            fd.target_port, fd.target_path, coalesce(fd.environment_override, a.environment) as agent_environment,
            -- routing (src/routing/apply.ts): the filter's version now (null: no filter); the worker reads and compiles
            -- a filter once per version, so the filter's JSON is not sent (and, on PGlite, parsed) with every row
            case when fd.filter is not null then fd.updated_at::text end as filter_version, c.ignore_filter,
            -- src/transformations: the code as it is now
            fd.transformation, (extract(epoch from c.request_received_at) * 1000)::float8 as request_received_ms,
            (extract(epoch from statement_timestamp()) * 1000)::float8 as db_now_ms
       from claimed c
       -- a range, not equality: received_at may carry microseconds the
       -- millisecond copy in the delivery row lost; the id pins the row
       left join captured_requests cr
              on c.status = 'in_flight' and cr.id = c.request_id
             and cr.received_at between c.request_received_at - interval '1 millisecond'
                                    and c.request_received_at + interval '1 millisecond'
       left join forward_destinations fd on fd.id = c.forward_destination_id
       left join agents a on a.id = c.agent_id
      -- the worker's launch order (ORDER, above)
      order by c.next_attempt_at, c.id`;

/**
 * CLAIM_DUE with replay batch pacing: bneed/btaken/bslots are need/taken/
 * slots for incident replay batches, paced at their requests_per_minute
 * from their replay_batch_pacing rows (src/incidents/replay.ts); a paced
 * batch's own rate applies instead of its destination's.
 */
export const CLAIM_DUE_PACING_BATCHES = `with next as materialized (
       -- deliveries alone, so the scan walks deliveries_due in order and stops at the limit
       select d.id, d.forward_destination_id, d.paced_slot, d.next_attempt_at, d.replay_batch_id
         from deliveries d
        where d.status = 'pending' and d.next_attempt_at <= now() and d.destination_type = $1
        order by d.next_attempt_at
        limit $2
          for update skip locked
     ),
     need as (
       select next.id, next.forward_destination_id as dest, fd.rate_limit_per_minute as rate,
              row_number() over (partition by next.forward_destination_id order by next.next_attempt_at, next.id) as k,
              count(*) over (partition by next.forward_destination_id) as n
         from next
         join forward_destinations fd on fd.id = next.forward_destination_id
        where fd.rate_limit_enabled and fd.rate_limit_per_minute is not null and ${NEEDS_SLOT}
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
     bneed as (
       select next.id, next.replay_batch_id as batch, rp.requests_per_minute as rate,
              row_number() over (partition by next.replay_batch_id order by next.next_attempt_at, next.id) as k,
              count(*) over (partition by next.replay_batch_id) as n
         from next join replay_batch_pacing rp on rp.replay_batch_id = next.replay_batch_id
        where ${NEEDS_SLOT}
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
              coalesce(s.slot, bs.slot, next.paced_slot, now()) <= now() + $3 * interval '1 millisecond' as go
         from next left join slots s on s.id = next.id left join bslots bs on bs.id = next.id
     ),
     claimed as (
       update deliveries d
          set status = case when plan.go then 'in_flight' else 'pending' end,
              paced_slot = plan.slot,
              next_attempt_at = case when plan.go then d.next_attempt_at else plan.slot end,
              lease_until = case when plan.go then greatest(coalesce(plan.slot, now()), now()) + $4 * interval '1 millisecond' end,
              leased_by = case when plan.go then $5 end,
              lease_id = case when plan.go then ${LEASE_ID} end,
              updated_at = now()
         from plan
        where d.id = plan.id
        returning d.*
     )
     select c.id, c.lease_id, c.status, c.organization_id, c.request_id, c.endpoint_id, c.forward_destination_id,
            c.destination_type, c.url, c.agent_id, c.attempt_count, (extract(epoch from c.paced_slot) * 1000)::float8 as paced_slot_ms, c.replay_batch_id,
            -- the body as bytea: PGlite's named statements fetch it in binary (src/db/pglite.ts), node-postgres decodes its hex natively
            cr.id as capture_id, cr.method, cr.path, cr.query, cr.headers, cr.body, cr.verification_status,
            fd.enabled, fd.method_override, fd.retry_enabled, fd.retry_schedule, fd.intelligent_retry,
            -- agent deliveries: the target as it is now, and the agent's environment as downgraded by the destination
            fd.target_port, fd.target_path, coalesce(fd.environment_override, a.environment) as agent_environment,
            -- routing (src/routing/apply.ts): the filter's version now (null: no filter); the worker reads and compiles
            -- a filter once per version, so the filter's JSON is not sent (and, on PGlite, parsed) with every row
            case when fd.filter is not null then fd.updated_at::text end as filter_version, c.ignore_filter,
            -- src/transformations: the code as it is now
            fd.transformation, (extract(epoch from c.request_received_at) * 1000)::float8 as request_received_ms,
            (extract(epoch from statement_timestamp()) * 1000)::float8 as db_now_ms,
            -- whether the next claim needs batch pacing again (the pacing row of a batch with nothing left is deleted)
            exists (select 1 from replay_batch_pacing) as paced_batches
       from claimed c
       -- a range, not equality: received_at may carry microseconds the
       -- millisecond copy in the delivery row lost; the id pins the row
       left join captured_requests cr
              on c.status = 'in_flight' and cr.id = c.request_id
             and cr.received_at between c.request_received_at - interval '1 millisecond'
                                    and c.request_received_at + interval '1 millisecond'
       left join forward_destinations fd on fd.id = c.forward_destination_id
       left join agents a on a.id = c.agent_id
      -- the worker's launch order (ORDER, above)
      order by c.next_attempt_at, c.id`;

/**
 * CLAIM_DUE for an agent worker: only the deliveries of the agents
 * connected to this node ($1), read from deliveries_agent_queue (agent_id,
 * next_attempt_at) one agent at a time, so the cost follows the connected
 * agents' queues, never an offline or revoked agent's backlog (on
 * deliveries_due they were stepped over one by one). The result is the
 * same rows CLAIM_DUE would take with that filter: the `limit` oldest due
 * of those agents (each agent's own oldest `limit` contain them).
 */
export const CLAIM_DUE_OF_AGENTS = `with heads as materialized (
       -- one walk of deliveries_agent_queue per connected agent, in due order and stopping at the
       -- limit, so no offline agent's backlog is read
       select due.id, due.at
         from (select distinct unnest($1::uuid[])) as a(agent_id)
        cross join lateral (
              select q.id, q.next_attempt_at as at from deliveries q
               where q.status = 'pending' and q.destination_type = 'agent' and q.agent_id = a.agent_id and q.next_attempt_at <= now()
               order by q.next_attempt_at
               limit $2
             ) due
     ),
     next as materialized (
       -- of those heads, the oldest due, as CLAIM_DUE takes them; ordered by the head's own due
       -- time, so that no walk of an index in that order can look cheaper to the planner
       select d.id, d.forward_destination_id, d.paced_slot, d.next_attempt_at
         from heads h
         join deliveries d on d.id = h.id
        -- the conditions again on the row itself: a row another claim changed since this statement's snapshot is
        -- re-checked when locked. collate "C" changes nothing in the test but hides it from the planner's proof
        -- that a partial index (status 'pending') applies: estimating one row of d from a queue table's statistics,
        -- it walked such an index whole and matched every row against the heads, instead of fetching each head by id
        where d.status collate "C" = 'pending' and d.next_attempt_at <= now() and d.destination_type = 'agent'
          -- evaluated once per statement: with a paced batch, claim nothing (the caller claims again with batch pacing)
          and not exists (select 1 from replay_batch_pacing)
        order by h.at
        limit $2
          for update of d skip locked
     ),
     need as (
       select next.id, next.forward_destination_id as dest, fd.rate_limit_per_minute as rate,
              row_number() over (partition by next.forward_destination_id order by next.next_attempt_at, next.id) as k,
              count(*) over (partition by next.forward_destination_id) as n
         from next
         join forward_destinations fd on fd.id = next.forward_destination_id
        where fd.rate_limit_enabled and fd.rate_limit_per_minute is not null and ${NEEDS_SLOT}
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
     plan as (
       select next.id, coalesce(s.slot, next.paced_slot) as slot,
              coalesce(s.slot, next.paced_slot, now()) <= now() + $3 * interval '1 millisecond' as go
         from next left join slots s on s.id = next.id
     ),
     claimed as (
       update deliveries d
          set status = case when plan.go then 'in_flight' else 'pending' end,
              paced_slot = plan.slot,
              next_attempt_at = case when plan.go then d.next_attempt_at else plan.slot end,
              lease_until = case when plan.go then greatest(coalesce(plan.slot, now()), now()) + $4 * interval '1 millisecond' end,
              leased_by = case when plan.go then $5 end,
              lease_id = case when plan.go then ${LEASE_ID} end,
              updated_at = now()
         from plan
        where d.id = plan.id
        returning d.*
     )
     select c.id, c.lease_id, c.status, c.organization_id, c.request_id, c.endpoint_id, c.forward_destination_id,
            c.destination_type, c.url, c.agent_id, c.attempt_count, (extract(epoch from c.paced_slot) * 1000)::float8 as paced_slot_ms, c.replay_batch_id,
            -- the body as bytea: PGlite's named statements fetch it in binary (src/db/pglite.ts), node-postgres decodes its hex natively
            cr.id as capture_id, cr.method, cr.path, cr.query, cr.headers, cr.body, cr.verification_status,
            fd.enabled, fd.method_override, fd.retry_enabled, fd.retry_schedule, fd.intelligent_retry,
            -- agent deliveries: the target as it is now, and the agent's environment as downgraded by the destination
            fd.target_port, fd.target_path, coalesce(fd.environment_override, a.environment) as agent_environment,
            -- routing (src/routing/apply.ts): the filter's version now (null: no filter); the worker reads and compiles
            -- a filter once per version, so the filter's JSON is not sent (and, on PGlite, parsed) with every row
            case when fd.filter is not null then fd.updated_at::text end as filter_version, c.ignore_filter,
            -- src/transformations: the code as it is now
            fd.transformation, (extract(epoch from c.request_received_at) * 1000)::float8 as request_received_ms,
            (extract(epoch from statement_timestamp()) * 1000)::float8 as db_now_ms
       from claimed c
       -- a range, not equality: received_at may carry microseconds the
       -- millisecond copy in the delivery row lost; the id pins the row
       left join captured_requests cr
              on c.status = 'in_flight' and cr.id = c.request_id
             and cr.received_at between c.request_received_at - interval '1 millisecond'
                                    and c.request_received_at + interval '1 millisecond'
       left join forward_destinations fd on fd.id = c.forward_destination_id
       left join agents a on a.id = c.agent_id
      -- the worker's launch order (ORDER, above)
      order by c.next_attempt_at, c.id`;

/** CLAIM_DUE_OF_AGENTS with replay batch pacing, as CLAIM_DUE_PACING_BATCHES is to CLAIM_DUE. */
export const CLAIM_DUE_OF_AGENTS_PACING_BATCHES = `with heads as materialized (
       -- one walk of deliveries_agent_queue per connected agent, in due order and stopping at the
       -- limit, so no offline agent's backlog is read
       select due.id, due.at
         from (select distinct unnest($1::uuid[])) as a(agent_id)
        cross join lateral (
              select q.id, q.next_attempt_at as at from deliveries q
               where q.status = 'pending' and q.destination_type = 'agent' and q.agent_id = a.agent_id and q.next_attempt_at <= now()
               order by q.next_attempt_at
               limit $2
             ) due
     ),
     next as materialized (
       -- of those heads, the oldest due, as CLAIM_DUE takes them; ordered by the head's own due
       -- time, so that no walk of an index in that order can look cheaper to the planner
       select d.id, d.forward_destination_id, d.paced_slot, d.next_attempt_at, d.replay_batch_id
         from heads h
         join deliveries d on d.id = h.id
        -- the conditions again on the row itself: a row another claim changed since this statement's snapshot is
        -- re-checked when locked. collate "C" changes nothing in the test but hides it from the planner's proof
        -- that a partial index (status 'pending') applies: estimating one row of d from a queue table's statistics,
        -- it walked such an index whole and matched every row against the heads, instead of fetching each head by id
        where d.status collate "C" = 'pending' and d.next_attempt_at <= now() and d.destination_type = 'agent'
        order by h.at
        limit $2
          for update of d skip locked
     ),
     need as (
       select next.id, next.forward_destination_id as dest, fd.rate_limit_per_minute as rate,
              row_number() over (partition by next.forward_destination_id order by next.next_attempt_at, next.id) as k,
              count(*) over (partition by next.forward_destination_id) as n
         from next
         join forward_destinations fd on fd.id = next.forward_destination_id
        where fd.rate_limit_enabled and fd.rate_limit_per_minute is not null and ${NEEDS_SLOT}
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
     bneed as (
       select next.id, next.replay_batch_id as batch, rp.requests_per_minute as rate,
              row_number() over (partition by next.replay_batch_id order by next.next_attempt_at, next.id) as k,
              count(*) over (partition by next.replay_batch_id) as n
         from next join replay_batch_pacing rp on rp.replay_batch_id = next.replay_batch_id
        where ${NEEDS_SLOT}
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
              coalesce(s.slot, bs.slot, next.paced_slot, now()) <= now() + $3 * interval '1 millisecond' as go
         from next left join slots s on s.id = next.id left join bslots bs on bs.id = next.id
     ),
     claimed as (
       update deliveries d
          set status = case when plan.go then 'in_flight' else 'pending' end,
              paced_slot = plan.slot,
              next_attempt_at = case when plan.go then d.next_attempt_at else plan.slot end,
              lease_until = case when plan.go then greatest(coalesce(plan.slot, now()), now()) + $4 * interval '1 millisecond' end,
              leased_by = case when plan.go then $5 end,
              lease_id = case when plan.go then ${LEASE_ID} end,
              updated_at = now()
         from plan
        where d.id = plan.id
        returning d.*
     )
     select c.id, c.lease_id, c.status, c.organization_id, c.request_id, c.endpoint_id, c.forward_destination_id,
            c.destination_type, c.url, c.agent_id, c.attempt_count, (extract(epoch from c.paced_slot) * 1000)::float8 as paced_slot_ms, c.replay_batch_id,
            -- the body as bytea: PGlite's named statements fetch it in binary (src/db/pglite.ts), node-postgres decodes its hex natively
            cr.id as capture_id, cr.method, cr.path, cr.query, cr.headers, cr.body, cr.verification_status,
            fd.enabled, fd.method_override, fd.retry_enabled, fd.retry_schedule, fd.intelligent_retry,
            -- agent deliveries: the target as it is now, and the agent's environment as downgraded by the destination
            fd.target_port, fd.target_path, coalesce(fd.environment_override, a.environment) as agent_environment,
            -- routing (src/routing/apply.ts): the filter's version now (null: no filter); the worker reads and compiles
            -- a filter once per version, so the filter's JSON is not sent (and, on PGlite, parsed) with every row
            case when fd.filter is not null then fd.updated_at::text end as filter_version, c.ignore_filter,
            -- src/transformations: the code as it is now
            fd.transformation, (extract(epoch from c.request_received_at) * 1000)::float8 as request_received_ms,
            (extract(epoch from statement_timestamp()) * 1000)::float8 as db_now_ms,
            -- whether the next claim needs batch pacing again (the pacing row of a batch with nothing left is deleted)
            exists (select 1 from replay_batch_pacing) as paced_batches
       from claimed c
       -- a range, not equality: received_at may carry microseconds the
       -- millisecond copy in the delivery row lost; the id pins the row
       left join captured_requests cr
              on c.status = 'in_flight' and cr.id = c.request_id
             and cr.received_at between c.request_received_at - interval '1 millisecond'
                                    and c.request_received_at + interval '1 millisecond'
       left join forward_destinations fd on fd.id = c.forward_destination_id
       left join agents a on a.id = c.agent_id
      -- the worker's launch order (ORDER, above)
      order by c.next_attempt_at, c.id`;

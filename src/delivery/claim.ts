import { randomUUID } from 'node:crypto';
import type { Db, Queryable, Settings } from '../db/db.ts';
import { agentRetry, destinationRetry } from './retry-policy.ts';
import { CLAIM_DUE, CLAIM_DUE_OF_AGENTS, CLAIM_DUE_OF_AGENTS_PACING_BATCHES, CLAIM_DUE_PACING_BATCHES, type ClaimRow } from './claim-statement.ts';
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
  /**
   * What the caller's last claim returned as `pacedBatches` (a hint: false
   * or absent tries the cheaper statement first, which claims nothing
   * while a replay batch is paced).
   */
  pacedBatches?: boolean;
}

export interface ClaimResult {
  claimed: ClaimedDelivery[];
  rescheduled: number;
  /** Whether a replay batch was paced when this claim ran: pass it back as ClaimOptions.pacedBatches. */
  pacedBatches: boolean;
}

/**
 * Claims up to `limit` due deliveries in ONE statement, so a claim is atomic
 * and several workers on several nodes never take the same row:
 * - `next` locks the oldest due rows, skipping rows another claim holds
 *   (SKIP LOCKED: claimers never wait on each other); an agent worker's
 *   claim reads only its connected agents' queues (CLAIM_DUE_OF_AGENTS);
 * - `need`/`taken`/`slots` give each delivery of a rate-limited destination
 *   the next dispatch slots of that destination, advancing its
 *   destination_pacing row (the upsert's row lock serialises nodes, so slots
 *   are globally unique and evenly spaced);
 * - `bneed`/`btaken`/`bslots` do the same for paced replay batches, from
 *   their replay_batch_pacing rows (only in the statements run while a
 *   batch is paced, see claim-statement.ts);
 * - `claimed` leases what can go now (unpaced, or a slot within the
 *   horizon) and writes the rest back as pending until their slot, which
 *   also moves them out of the way of other destinations' deliveries;
 * - the final select joins the capture (exact bytes) and the destination's
 *   current settings for the leased rows.
 * Returns the leased deliveries (rescheduled ones are only counted) and
 * whether paced replay batches exist, which the caller passes back as
 * `pacedBatches` on its next claim.
 */
export async function claimDeliveries(db: Db, o: ClaimOptions): Promise<ClaimResult> {
  // A queue table misleads the planner: statistics (PostgreSQL's taken
  // while the queue was empty, PGlite's none at all) say almost nothing is
  // pending, so it reads every due row and sorts them: a cost growing with
  // the backlog exactly when a backlog builds. Only the ordered scan of
  // deliveries_due is allowed here; it stops after `limit` rows. Each
  // statement is atomic on its own and reads its own snapshot, so nothing
  // here needs them to commit together: on PostgreSQL a claim is one round
  // trip (Db.withSettings).
  return db.withSettings(CLAIM_SETTINGS, async (q) => {
    if (!o.pacedBatches) {
      const fast = await claimIn(q, o, false);
      // claimed nothing: either nothing was due, or the statement's guard saw a paced batch
      if (fast.claimed.length + fast.rescheduled > 0 || !(await pacedBatchesExist(q))) return fast;
    }
    return claimIn(q, o, true);
  });
}

/**
 * How the claim statements plan: only ordered index walks (see
 * claimDeliveries). And their commits do not wait for the WAL flush
 * (synchronous_commit off, for the claim's statements only): a claim records no
 * acknowledgement, only leases and dispatch slots, and on PostgreSQL the
 * flush was about 1 ms of the 3-4.5 ms between a capture's NOTIFY and its
 * forward leaving (docs/forwarding.md, Latency). Should the database crash
 * before the WAL writer flushed a claim (within three wal_writer_delay,
 * 600 ms by default), the claim is undone: its deliveries are pending again
 * with their attempt counts as before and are forwarded again, as at least
 * once allows, and a rate-limited destination's slots handed out by it are
 * handed out again. Nothing recorded after it can survive without it: an
 * outcome's commit waits for the flush of every WAL record before its own,
 * the claim's included. No process of Weir's crashing loses a claim: only
 * the database's own crash does.
 */
export const CLAIM_SETTINGS: Settings = { enable_seqscan: 'off', enable_bitmapscan: 'off', synchronous_commit: 'off' };

/** Whether any replay batch has a pacing row, that is, may still have deliveries to pace (see endIdleBatchPacing). */
async function pacedBatchesExist(db: Queryable): Promise<boolean> {
  const { rows } = await db.query<{ paced: boolean }>('select exists (select 1 from replay_batch_pacing) as paced', [], { name: 'weir_paced_batches' });
  return rows[0].paced;
}

async function claimIn(db: Queryable, o: ClaimOptions, batches: boolean): Promise<ClaimResult> {
  const sentAt = Date.now();
  const ofAgents = o.destinationType === 'agent' && o.agentIds != null;
  const [statement, name] = ofAgents
    ? batches
      ? [CLAIM_DUE_OF_AGENTS_PACING_BATCHES, 'weir_claim_of_agents_pacing_batches']
      : [CLAIM_DUE_OF_AGENTS, 'weir_claim_of_agents']
    : batches
      ? [CLAIM_DUE_PACING_BATCHES, 'weir_claim_pacing_batches']
      : [CLAIM_DUE, 'weir_claim'];
  const { rows } = await db.query<ClaimRow>(statement, [ofAgents ? o.agentIds : o.destinationType, o.limit, PACING_HORIZON_MS, o.leaseMs, o.node, randomUUID()], { name });
  if (rows.length === 0) return { claimed: [], rescheduled: 0, pacedBatches: batches && (await pacedBatchesExist(db)) };
  // The database's clock hands out slots; convert them to this process's
  // clock, pairing the statement's start there with when it was sent here.
  const skew = rows[0].db_now_ms - sentAt;
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
      replayBatchId: r.replay_batch_id,
      attemptNumber: r.attempt_count + 1,
      sendAt: r.paced_slot_ms !== null ? r.paced_slot_ms - skew : 0,
      pacedSlotMs: r.paced_slot_ms,
      capture: r.capture_id
        ? {
            id: r.capture_id,
            method: r.method!,
            path: r.path ?? '',
            query: r.query ?? '',
            headers: r.headers ?? [],
            body: r.body ?? Buffer.alloc(0),
            verification: r.verification_status,
          }
        : null,
      // the forward_url has no row: it is always enabled, with the default retry settings
      enabled: r.forward_destination_id === null ? true : r.enabled === true,
      methodOverride: r.method_override,
      targetPort: r.target_port,
      targetPath: r.target_path,
      agentEnvironment: r.agent_environment,
      filterVersion: r.ignore_filter ? null : r.filter_version,
      transformation: r.transformation,
      requestReceivedAt: r.request_received_ms === null ? null : new Date(r.request_received_ms),
      retry:
        r.destination_type === 'agent'
          ? agentRetry(r.agent_environment)
          : destinationRetry(r.forward_destination_id, r.retry_enabled, r.retry_schedule, r.intelligent_retry),
    });
  }
  // The update returns rows in no particular order; a delivery id starts
  // with its capture's id, so this launches a batch in capture order (an
  // agent forwards each destination's deliveries in the order it gets them).
  claimed.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { claimed, rescheduled: rows.length - claimed.length, pacedBatches: rows[0].paced_batches === true };
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
    // a paused batch's delivery stays held, a cancelled one's ends failed (the delivery_retry_* functions, migration 0021)
    `update deliveries
        set status = delivery_retry_status(next_attempt_at),
            next_attempt_at = delivery_retry_due(next_attempt_at, now()), paced_slot = null,
            lease_until = null, leased_by = null, lease_id = null,
            last_error = delivery_retry_error(next_attempt_at, 'lease expired: the worker stopped before recording an outcome'), updated_at = now()
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
    // a paused batch's delivery stays held, a cancelled one's ends failed (the delivery_retry_* functions, migration 0021)
    `update deliveries
        set status = delivery_retry_status(next_attempt_at),
            next_attempt_at = delivery_retry_due(next_attempt_at, case when $2::boolean then least(next_attempt_at, now()) else now() end),
            paced_slot = null,
            last_error = delivery_retry_error(next_attempt_at, last_error),
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
  const ofAgents = destinationType === 'agent' && agentIds != null;
  // prepared (named): the worker asks after every pass that leaves nothing due, so on a quiet queue once a forward;
  // on PGlite a plain statement's parse and plan cost about 7 times its run (docs/forwarding.md)
  const { rows } = await db.query<{ at_ms: number | null; db_now_ms: number }>(
    ofAgents ? NEXT_DUE_OF_AGENTS : NEXT_DUE,
    [ofAgents ? agentIds : destinationType],
    { name: ofAgents ? 'weir_next_due_of_agents' : 'weir_next_due' },
  );
  const r = rows[0];
  if (r?.at_ms == null) return null;
  return r.at_ms - (r.db_now_ms - Date.now());
}

/** Epoch milliseconds as float8 from the exact numeric, as the claim reads its times (ClaimRow). */
const EPOCH_MS = (t: string) => `(extract(epoch from ${t}) * 1000)::float8`;

/**
 * When the earliest waiting delivery of a destination type ($1) is due: the
 * first entry of deliveries_due. Asked through a function (migration 0025),
 * whose settings keep its query on that index: this statement is prepared,
 * and a generic plan made with deliveries analyzed at a few rows read the
 * whole table, for the connection's life.
 */
export const NEXT_DUE = `select ${EPOCH_MS('deliveries_next_due($1::text)')} as at_ms,
       ${EPOCH_MS('statement_timestamp()')} as db_now_ms`;

/**
 * When the earliest waiting delivery of these agents ($1) is due: the first
 * entry of each one's deliveries_agent_queue, never another agent's backlog
 * (a minimum over deliveries_due filtered by agent stepped over it). Through
 * a function for the same reason as NEXT_DUE: planned inline at a few rows,
 * it read the whole table once per connected agent.
 */
export const NEXT_DUE_OF_AGENTS = `select ${EPOCH_MS('deliveries_next_due_of_agents($1::uuid[])')} as at_ms,
       ${EPOCH_MS('statement_timestamp()')} as db_now_ms`;

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

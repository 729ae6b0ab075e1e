import type { Db, Queryable } from '../db/db.ts';
import { newId } from '../db/ids.ts';
import { forwardTargets, type ForwardTarget, type NewDelivery } from '../delivery/enqueue.ts';
import { batchCounts, cancelBatch, endIdleBatchPacing, holdBatch, lastAttemptsAllFailed, queuePacedBatch, releaseBatch } from '../delivery/replay-batch.ts';
import { supersedeWaiting } from '../delivery/supersede.ts';
import { endpointNames } from '../destinations/endpoint-ref.ts';
import { addUpdate, findIncident } from './store.ts';
import { emitEvent } from '../subscriptions/emit.ts';
import { announceReplayFailures } from './failure-events.ts';

/**
 * Paced replay of an incident's unreplayed failures: each failure's
 * captured request is queued again as an ordinary delivery to its
 * destination, tagged with the batch, and the delivery claim spaces the
 * batch's deliveries `60 s / requests_per_minute` apart across all nodes
 * (src/delivery/replay-batch.ts). A batch that keeps failing pauses itself
 * instead of burning the backlog against a destination that broke again.
 */

export const MIN_RATE = 1;
export const MAX_RATE = 6000;
/** The specification's cap on how long one batch may take. */
export const MAX_BATCH_MINUTES = 12 * 60;
/** A running batch pauses itself when this many of its attempts in a row failed. */
export const PAUSE_AFTER_FAILURES = 5;

export type ReplayQueued =
  | { ok: true; replayBatchId: string; queuedCount: number; requestsPerMinute: number }
  | { ok: false; reason: 'not_found' }
  | { ok: false; reason: 'nothing_to_replay' }
  | { ok: false; reason: 'too_long'; count: number; minutes: number };

interface Unreplayed {
  id: string;
  delivery_id: string;
  request_id: string;
  request_received_at: Date;
  endpoint_id: string;
  forward_destination_id: string | null;
  destination_type: 'https' | 'agent';
  agent_id: string | null;
  destination_url: string;
}

export function formatDuration(minutes: number): string {
  if (minutes < 1) return `${Math.max(1, Math.round(minutes * 60))} s`;
  if (minutes < 60) return `${Math.round(minutes)} min`;
  const h = Math.floor(minutes / 60);
  const m = Math.round(minutes - h * 60);
  return m ? `${h} h ${m} min` : `${h} h`;
}

/** Where each failure goes now: its forward destination as it is (if it still exists), or the forward_url it failed on (if its endpoint still exists). */
async function targetsOf(tx: Queryable, organizationId: string, failures: Unreplayed[]): Promise<Map<string, ForwardTarget>> {
  const endpointIds = [...new Set(failures.map((f) => f.endpoint_id))];
  const [targets, endpoints] = await Promise.all([forwardTargets(tx, endpointIds, { includeDisabled: true }), endpointNames(tx, organizationId, endpointIds)]);
  const byDestination = new Map(targets.filter((t) => t.forwardDestinationId).map((t) => [t.forwardDestinationId!, t]));
  const out = new Map<string, ForwardTarget>();
  for (const f of failures) {
    if (f.forward_destination_id) {
      const t = byDestination.get(f.forward_destination_id);
      if (t) out.set(f.id, { ...t, enabled: true });
    } else if (endpoints.has(f.endpoint_id) && f.destination_type === 'https') {
      out.set(f.id, { endpointId: f.endpoint_id, forwardDestinationId: null, destinationType: 'https', url: f.destination_url, agentId: null, enabled: true });
    }
  }
  return out;
}

/**
 * Queues a paced replay of the incident's failures not yet replayed and not
 * recovered since (a failure whose destination is gone is left out).
 * Refused when nothing is left or when the batch would last more than 12 hours at that rate.
 */
export async function queueIncidentReplay(
  db: Db,
  input: { organizationId: string; incidentId: string; requestsPerMinute: number; memberId: string },
): Promise<ReplayQueued> {
  return db.transaction(async (tx) => {
    // the incident's row lock serialises two replays of one incident: a failure is queued once
    const incident = await findIncident(tx, input.organizationId, input.incidentId, { lock: true });
    if (!incident) return { ok: false, reason: 'not_found' } as const;
    const { rows: failures } = await tx.query<Unreplayed>(
      `select id, delivery_id, request_id, request_received_at, endpoint_id, forward_destination_id, destination_type, agent_id, destination_url
         from incident_failures
        where incident_id = $1::uuid and replay_delivery_id is null and recovered_at is null
        order by id`,
      [incident.id],
    );
    const targets = await targetsOf(tx, input.organizationId, failures);
    const queued = failures.filter((f) => targets.has(f.id));
    if (queued.length === 0) return { ok: false, reason: 'nothing_to_replay' } as const;
    const minutes = queued.length / input.requestsPerMinute;
    if (minutes > MAX_BATCH_MINUTES) return { ok: false, reason: 'too_long', count: queued.length, minutes } as const;

    const batchId = newId();
    await tx.query(
      `insert into replay_batches (id, organization_id, incident_id, requests_per_minute, queued_count, created_by)
       values ($1::uuid, $2::uuid, $3::uuid, $4, $5, $6::uuid)`,
      [batchId, input.organizationId, incident.id, input.requestsPerMinute, queued.length, input.memberId],
    );
    const deliveries: NewDelivery[] = queued.map((f) => ({
      id: newId(),
      organizationId: input.organizationId,
      requestId: f.request_id,
      requestReceivedAt: new Date(f.request_received_at),
      target: targets.get(f.id)!,
      replayBatchId: batchId,
    }));
    await queuePacedBatch(tx, batchId, input.requestsPerMinute, deliveries);
    await tx.query(
      `update incident_failures f set replay_batch_id = $1::uuid, replay_delivery_id = x.delivery_id
         from unnest($2::uuid[], $3::uuid[]) as x(failure_id, delivery_id)
        where f.id = x.failure_id`,
      [batchId, queued.map((f) => f.id), deliveries.map((d) => d.id)],
    );
    // a failed delivery still waiting for its retry is replaced by the batch's delivery, not run beside it (issue 28)
    const replaced = await supersedeWaiting(tx, queued.map((f) => f.delivery_id), `incident replay batch ${batchId} took its place`);
    if (replaced.length > 0) {
      const gone = new Set(replaced);
      await tx.query(`update incident_failures set next_attempt_at = null where id = any($1::uuid[])`, [queued.filter((f) => gone.has(f.delivery_id)).map((f) => f.id)]);
    }
    await addUpdate(tx, {
      organizationId: input.organizationId,
      incidentId: incident.id,
      body: `Replay queued by member ${input.memberId}: ${queued.length} failed request${queued.length === 1 ? '' : 's'} at ${input.requestsPerMinute}/min (about ${formatDuration(minutes)}), batch ${batchId}.`,
    });
    return { ok: true, replayBatchId: batchId, queuedCount: queued.length, requestsPerMinute: input.requestsPerMinute } as const;
  });
}

export interface BatchRow {
  id: string;
  organization_id: string;
  incident_id: string;
  requests_per_minute: number;
  status: 'running' | 'paused' | 'cancelled' | 'finished';
  queued_count: number;
  paused_reason: string | null;
  created_at: Date;
  finished_at: Date | null;
}

const BATCH_COLUMNS = 'id, organization_id, incident_id, requests_per_minute, status, queued_count, paused_reason, created_at, finished_at';

async function findBatch(db: Queryable, organizationId: string, id: string, lock = false): Promise<BatchRow | undefined> {
  const { rows } = await db.query<BatchRow>(
    `select ${BATCH_COLUMNS} from replay_batches where id = $1::uuid and organization_id = $2::uuid${lock ? ' for update' : ''}`,
    [id, organizationId],
  );
  return rows[0];
}

/** A batch with its progress: what was delivered, what failed, what is left, and when it should end at its rate. */
export async function getReplayBatch(db: Queryable, organizationId: string, id: string) {
  const b = await findBatch(db, organizationId, id);
  if (!b) return undefined;
  const c = (await batchCounts(db, [b.id])).get(b.id)!;
  const remaining = b.status === 'cancelled' ? 0 : c.waiting;
  return {
    id: b.id,
    incident_id: b.incident_id,
    status: b.status,
    requests_per_minute: b.requests_per_minute,
    queued_count: b.queued_count,
    delivered_count: c.succeeded,
    failed_count: c.failed,
    remaining_count: remaining,
    paused_reason: b.paused_reason,
    created_at: new Date(b.created_at).toISOString(),
    finished_at: b.finished_at ? new Date(b.finished_at).toISOString() : null,
    estimated_end_at: b.status === 'running' ? new Date(Date.now() + (remaining * 60_000) / b.requests_per_minute).toISOString() : null,
  };
}

export type BatchChange = { ok: true } | { ok: false; reason: 'not_found' | 'wrong_state'; status?: string };

/** Cancels a running or paused batch: its waiting deliveries end, and the failures never sent count as unreplayed again. */
export async function cancelReplayBatch(db: Db, organizationId: string, id: string, memberId: string): Promise<BatchChange> {
  return db.transaction(async (tx) => {
    const b = await findBatch(tx, organizationId, id, true);
    if (!b) return { ok: false, reason: 'not_found' } as const;
    if (b.status !== 'running' && b.status !== 'paused') return { ok: false, reason: 'wrong_state', status: b.status } as const;
    const cancelled = await cancelBatch(tx, b.id);
    // a failure whose replay was never sent is unreplayed again; one already tried keeps its replay record
    const { rowCount: unsent } = await tx.query(
      `update incident_failures set replay_batch_id = null, replay_delivery_id = null
        where replay_delivery_id = any($1::uuid[]) and replayed_at is null`,
      [cancelled],
    );
    await tx.query(`update replay_batches set status = 'cancelled', finished_at = now(), updated_at = now() where id = $1::uuid`, [b.id]);
    await addUpdate(tx, {
      organizationId,
      incidentId: b.incident_id,
      body: `Replay batch ${b.id} cancelled by member ${memberId}: ${unsent} request${unsent === 1 ? '' : 's'} not sent.`,
    });
    return { ok: true } as const;
  });
}

/**
 * Pauses a running batch on a member's request, as the automatic pause does:
 * its waiting deliveries are held (slots given back); what is in flight
 * finishes. Resume runs it again at its rate.
 */
export async function pauseReplayBatch(db: Db, organizationId: string, id: string, memberId: string): Promise<BatchChange> {
  return db.transaction(async (tx) => {
    const b = await findBatch(tx, organizationId, id, true);
    if (!b) return { ok: false, reason: 'not_found' } as const;
    if (b.status !== 'running') return { ok: false, reason: 'wrong_state', status: b.status } as const;
    const reason = `paused by member ${memberId}`;
    await tx.query(`update replay_batches set status = 'paused', paused_reason = $2, updated_at = now() where id = $1::uuid`, [b.id, reason]);
    const n = await holdBatch(tx, b.id);
    await addUpdate(tx, { organizationId, incidentId: b.incident_id, body: `Replay batch ${b.id} paused by member ${memberId}: ${n} request${n === 1 ? '' : 's'} held.` });
    return { ok: true } as const;
  });
}

/** Resumes a paused batch at its rate, from now on. */
export async function resumeReplayBatch(db: Db, organizationId: string, id: string, memberId: string): Promise<BatchChange> {
  return db.transaction(async (tx) => {
    const b = await findBatch(tx, organizationId, id, true);
    if (!b) return { ok: false, reason: 'not_found' } as const;
    if (b.status !== 'paused') return { ok: false, reason: 'wrong_state', status: b.status } as const;
    await tx.query(`update replay_batches set status = 'running', paused_reason = null, running_since = now(), updated_at = now() where id = $1::uuid`, [b.id]);
    const n = await releaseBatch(tx, b.id);
    await addUpdate(tx, { organizationId, incidentId: b.incident_id, body: `Replay batch ${b.id} resumed by member ${memberId}: ${n} request${n === 1 ? '' : 's'} left.` });
    return { ok: true } as const;
  });
}

/**
 * Watches running batches: one with nothing left waiting is finished (with
 * its counts in a system update); one whose last PAUSE_AFTER_FAILURES
 * attempts all failed is paused. Safe on every node at once: each change
 * is conditional on the batch still running. Then the pacing rows of
 * batches with nothing left waiting (finished, cancelled) are dropped, so
 * claims go back to their cheaper statement.
 */
export async function superviseReplayBatches(db: Db): Promise<{ finished: string[]; paused: string[] }> {
  const out = { finished: [] as string[], paused: [] as string[] };
  const { rows } = await db.query<BatchRow>(`select ${BATCH_COLUMNS} from replay_batches where status = 'running'`);
  if (rows.length > 0) await superviseRunning(db, rows, out);
  await endIdleBatchPacing(db);
  return out;
}

async function superviseRunning(db: Db, rows: BatchRow[], out: { finished: string[]; paused: string[] }): Promise<void> {
  const counts = await batchCounts(db, rows.map((r) => r.id));
  for (const b of rows) {
    const c = counts.get(b.id)!;
    if (c.waiting === 0) {
      const body = `Replay finished: batch ${b.id} delivered ${c.succeeded} of ${b.queued_count}; ${c.failed} failed.`;
      if (await db.transaction((tx) => changeState(tx, b, 'finished', null, body))) out.finished.push(b.id);
    } else if (await lastAttemptsAllFailed(db, b.id, PAUSE_AFTER_FAILURES)) {
      const reason = `the last ${PAUSE_AFTER_FAILURES} replayed requests failed: the destination is failing again`;
      const body = `Replay paused: ${reason}. ${c.waiting} left; resume it when the destination is back.`;
      const paused = await db.transaction(async (tx) => {
        if (!(await changeState(tx, b, 'paused', reason, body))) return false;
        await holdBatch(tx, b.id);
        return true;
      });
      if (paused) out.paused.push(b.id);
    }
  }
}

/** Moves a running batch to `status` and writes the system update, only if it was still running. */
async function changeState(tx: Queryable, b: BatchRow, status: 'finished' | 'paused', reason: string | null, body: string): Promise<boolean> {
  const { rowCount } = await tx.query(
    `update replay_batches
        set status = $2, paused_reason = $3, finished_at = case when $2 = 'finished' then now() end, updated_at = now()
      where id = $1::uuid and status = 'running'`,
    [b.id, status, reason],
  );
  if (rowCount === 0) return false;
  await addUpdate(tx, { organizationId: b.organization_id, incidentId: b.incident_id, body });
  // each replayed request that failed again is a new failure episode: announced once (failure-events.ts)
  await announceReplayFailures(tx, b.id);
  if (status === 'finished') {
    await emitEvent(tx, { organizationId: b.organization_id, type: 'replay.completed', data: async () => ({ object: await getReplayBatch(tx, b.organization_id, b.id) }) });
  }
  return true;
}

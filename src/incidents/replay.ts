import type { Db, Queryable } from '../db/db.ts';
import { newId } from '../db/ids.ts';
import { forwardTargets, type ForwardTarget, type NewDelivery } from '../delivery/enqueue.ts';
import * as batches from '../delivery/replay-batch.ts';
import { createReplayBatch, getReplayBatch, MAX_BATCH_MINUTES, type BatchNarration } from '../delivery/replay-batch.ts';
import { supersedeWaiting } from '../delivery/supersede.ts';
import { endpointNames } from '../destinations/endpoint-ref.ts';
import { addUpdate, findIncident } from './store.ts';
import { emitEvent } from '../subscriptions/emit.ts';
import { announceReplayFailures } from './failure-events.ts';

/**
 * Paced replay of an incident's unreplayed failures: which failures to
 * replay and where, and what the incident says at each step. The batch
 * itself (create, pace, pause, resume, cancel, finish) is owned by
 * src/delivery/replay-batch.ts, which this module calls: each failure's
 * captured request is queued again as an ordinary delivery to its
 * destination, tagged with the batch, and the delivery claim spaces the
 * batch's deliveries `60 s / requests_per_minute` apart across all nodes.
 * A batch that keeps failing pauses itself instead of burning the backlog
 * against a destination that broke again.
 */

export { MAX_BATCH_MINUTES, MAX_RATE, MIN_RATE, PAUSE_AFTER_FAILURES, getReplayBatch, type BatchRow } from '../delivery/replay-batch.ts';

export type ReplayQueued =
  | { ok: true; replayBatchId: string; queuedCount: number; requestsPerMinute: number }
  | { ok: false; reason: 'plan_limit' | 'not_found' | 'nothing_to_replay' | 'too_long'; message: string };

/** The organization's plan as a replay needs it: its name (for the message) and whether it allows incident replay. */
export interface ReplayPlan {
  name: string;
  incidentReplay: boolean;
}

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
  input: { organizationId: string; incidentId: string; requestsPerMinute: number; memberId: string; plan: ReplayPlan },
): Promise<ReplayQueued> {
  if (!input.plan.incidentReplay) {
    return { ok: false, reason: 'plan_limit', message: `Incident replay needs the Starter plan or above; this organization is on ${input.plan.name}.` };
  }
  return db.transaction(async (tx): Promise<ReplayQueued> => {
    // the incident's row lock serialises two replays of one incident: a failure is queued once
    const incident = await findIncident(tx, input.organizationId, input.incidentId, { lock: true });
    if (!incident) return { ok: false, reason: 'not_found', message: `Incident ${input.incidentId} not found.` };
    const { rows: failures } = await tx.query<Unreplayed>(
      `select id, delivery_id, request_id, request_received_at, endpoint_id, forward_destination_id, destination_type, agent_id, destination_url
         from incident_failures
        where incident_id = $1::uuid and replay_delivery_id is null and recovered_at is null
        order by id`,
      [incident.id],
    );
    const targets = await targetsOf(tx, input.organizationId, failures);
    const queued = failures.filter((f) => targets.has(f.id));
    if (queued.length === 0) return { ok: false, reason: 'nothing_to_replay', message: 'This incident has no unreplayed failures left to replay.' };
    const rate = input.requestsPerMinute;
    const minutes = queued.length / rate;
    if (minutes > MAX_BATCH_MINUTES) {
      const message =
        `Replaying ${queued.length} failures at ${rate}/min would take ${formatDuration(minutes)}, longer than the ${MAX_BATCH_MINUTES / 60} hour limit: ` +
        `choose at least ${Math.ceil(queued.length / MAX_BATCH_MINUTES)} requests per minute, or replay a subset.`;
      return { ok: false, reason: 'too_long', message };
    }

    const batchId = newId();
    const deliveries: NewDelivery[] = queued.map((f) => ({
      id: newId(),
      organizationId: input.organizationId,
      requestId: f.request_id,
      requestReceivedAt: new Date(f.request_received_at),
      target: targets.get(f.id)!,
      replayBatchId: batchId,
    }));
    await createReplayBatch(
      tx,
      { id: batchId, organizationId: input.organizationId, incidentId: incident.id, requestsPerMinute: input.requestsPerMinute, createdBy: input.memberId },
      deliveries,
    );
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

export type BatchChange = { ok: true } | { ok: false; reason: 'not_found' | 'wrong_state'; status?: string };

const plural = (n: number) => (n === 1 ? '' : 's');

/** Cancels a running or paused batch: its waiting deliveries end, and the failures never sent count as unreplayed again. */
export async function cancelReplayBatch(db: Db, organizationId: string, id: string, memberId: string): Promise<BatchChange> {
  return db.transaction(async (tx) => {
    const r = await batches.cancelReplayBatch(tx, organizationId, id);
    if (!r.ok) return r;
    // a failure whose replay was never sent is unreplayed again; one already tried keeps its replay record
    const { rowCount: unsent } = await tx.query(
      `update incident_failures set replay_batch_id = null, replay_delivery_id = null
        where replay_delivery_id = any($1::uuid[]) and replayed_at is null`,
      [r.cancelled],
    );
    await addUpdate(tx, { organizationId, incidentId: r.batch.incident_id, body: `Replay batch ${id} cancelled by member ${memberId}: ${unsent} request${plural(unsent)} not sent.` });
    return { ok: true } as const;
  });
}

/**
 * Pauses a running batch on a member's request, as the automatic pause does:
 * its waiting deliveries are held (slots given back); what is in flight
 * finishes, and a retry it needs is held too. Resume runs it again at its rate.
 */
export async function pauseReplayBatch(db: Db, organizationId: string, id: string, memberId: string): Promise<BatchChange> {
  return db.transaction(async (tx) => {
    const r = await batches.pauseReplayBatch(tx, organizationId, id, `paused by member ${memberId}`);
    if (!r.ok) return r;
    await addUpdate(tx, { organizationId, incidentId: r.batch.incident_id, body: `Replay batch ${id} paused by member ${memberId}: ${r.held} request${plural(r.held)} held.` });
    return { ok: true } as const;
  });
}

/** Resumes a paused batch at its rate, from now on. */
export async function resumeReplayBatch(db: Db, organizationId: string, id: string, memberId: string): Promise<BatchChange> {
  return db.transaction(async (tx) => {
    const r = await batches.resumeReplayBatch(tx, organizationId, id);
    if (!r.ok) return r;
    await addUpdate(tx, { organizationId, incidentId: r.batch.incident_id, body: `Replay batch ${id} resumed by member ${memberId}: ${r.released} request${plural(r.released)} left.` });
    return { ok: true } as const;
  });
}

/** What the incident says, and announces, when the supervisor finishes or pauses one of its batches. */
const narration: BatchNarration = {
  async finished(tx, b, c) {
    await addUpdate(tx, { organizationId: b.organization_id, incidentId: b.incident_id, body: `Replay finished: batch ${b.id} delivered ${c.succeeded} of ${b.queued_count}; ${c.failed} failed.` });
    // each replayed request that failed again is a new failure episode: announced once (failure-events.ts)
    await announceReplayFailures(tx, b.id);
    await emitEvent(tx, { organizationId: b.organization_id, type: 'replay.completed', data: async () => ({ object: await getReplayBatch(tx, b.organization_id, b.id) }) });
  },
  async paused(tx, b, reason, c) {
    await addUpdate(tx, { organizationId: b.organization_id, incidentId: b.incident_id, body: `Replay paused: ${reason}. ${c.waiting} left; resume it when the destination is back.` });
    await announceReplayFailures(tx, b.id);
  },
};

/**
 * Watches running batches (src/delivery/replay-batch.ts
 * superviseReplayBatches): one with nothing left waiting is finished, one
 * whose last attempts all failed is paused, each with its system update on
 * the incident. Safe on every node at once.
 */
export function superviseReplayBatches(db: Db): Promise<{ finished: string[]; paused: string[] }> {
  return batches.superviseReplayBatches(db, narration);
}

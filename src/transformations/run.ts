import type { Logger } from 'pino';
import type { Queryable } from '../db/db.ts';
import type { Outcome } from '../delivery/complete.ts';
import { buildForwardRequest } from '../delivery/forward-request.ts';
import type { AttemptResult, ClaimedDelivery } from '../delivery/transport.ts';
import { applyOutput, toSandboxInput } from './request.ts';
import { codeHash, DEFAULT_LIMITS, sandbox, type Limits } from './sandbox.ts';

/** What the delivery worker gives the transformation step. */
export interface TransformDeps {
  db: Queryable;
  /** The worker's completion batcher: a failed transformation is recorded like any attempt. */
  completions: { record(outcome: Outcome): Promise<boolean> };
  logger: Logger;
  limits?: Limits;
}

/** The request as sent, stored on the attempt (GET /v1/requests/:id/forwards/:delivery_id/transformed). */
export interface SentRequest {
  method: string;
  url: string | null;
  path: string;
  query: string;
  /** Flat [name, value, ...] as sent, Weir's headers included. */
  headers: string[];
  body_base64: string;
}

export type Prepared =
  /** Ended here (skipped, or the code failed): the worker only reports it. */
  | { settled: 'skipped' | 'failed' }
  /** Send `delivery`; `finish` adds the code version and what was sent to the attempt's result. */
  | { settled?: undefined; delivery: ClaimedDelivery; finish(result: AttemptResult): AttemptResult };

const UNCHANGED = (result: AttemptResult) => result;

/** Why a delivery was skipped, in its last_error (the forwards list shows it). */
export const SKIPPED_REASON = 'skipped: the transformation returned null (not forwarded)';

/**
 * The transformation step of one claimed delivery, between the claim (and
 * the routing filter) and the request being built: runs the destination's
 * code on the original request and hands back the delivery with the
 * request to send instead. A null answer ends the delivery `skipped` (no
 * attempt, no incident); a failure (`transformation_timeout`,
 * `transformation_memory`, `transformation_error: <message>`) is recorded
 * as a failed attempt that is not retried, through the completion
 * statement, so it opens an incident like any failure.
 */
export async function transformDelivery(d: ClaimedDelivery, deps: TransformDeps): Promise<Prepared> {
  if (!d.transformation || !d.capture) return { delivery: d, finish: UNCHANGED };
  const limits = deps.limits ?? DEFAULT_LIMITS;
  const code = d.transformation.code;
  const hash = codeHash(code);
  const startedAt = new Date();
  const input = toSandboxInput(d.capture, d.methodOverride ?? d.capture.method, {
    endpointId: d.endpointId,
    destinationId: d.forwardDestinationId,
    receivedAt: d.requestReceivedAt ?? null,
  });
  const run = await sandbox.run(code, input, { scope: d.organizationId, limits });
  if (run.logs.length > 0) deps.logger.info({ delivery: d.id, transformation: hash.slice(0, 12), logs: run.logs }, 'transformation console output');
  let failure: { errorClass: 'transformation_timeout' | 'transformation_memory' | 'transformation_error'; message: string } | null = null;
  let applied: ReturnType<typeof applyOutput> | null = null;
  if (!run.ok) failure = { errorClass: run.error, message: run.error === 'transformation_error' ? `transformation_error: ${run.message}` : run.error };
  else if (run.output === null) {
    await deps.db.query(
      `update deliveries
          set status = 'skipped', paced_slot = null, lease_until = null, leased_by = null, lease_id = null,
              last_error = $3, updated_at = now()
        where id = $1::uuid and lease_id = $2::uuid and status = 'in_flight'`,
      [d.id, d.leaseId, SKIPPED_REASON],
    );
    return { settled: 'skipped' };
  } else {
    applied = applyOutput(run.output, d.capture, input.request, limits.maxOutputBytes);
    if (!applied.ok) failure = { errorClass: 'transformation_error', message: `transformation_error: ${applied.message}` };
  }
  if (failure || !applied?.ok) {
    const f = failure ?? { errorClass: 'transformation_error' as const, message: 'transformation_error' };
    await deps.completions.record({
      delivery: d,
      result: { startedAt, durationMs: Math.round(run.durationMs), url: d.url, errorClass: f.errorClass, errorMessage: f.message, transformationHash: hash },
      // the same code fails the same way: final, and last_error is exactly the cause
      decision: { status: 'failed', reason: '' },
    });
    return { settled: 'failed' };
  }
  const capture = applied.capture;
  const delivery: ClaimedDelivery = { ...d, capture, methodOverride: null };
  return {
    delivery,
    finish(result) {
      const built = buildForwardRequest(capture, d.url ?? 'http://agent.invalid/', null);
      const sent: SentRequest = {
        method: built.method,
        url: result.url,
        path: capture.path,
        query: capture.query,
        headers: built.headers,
        body_base64: capture.body.toString('base64'),
      };
      return { ...result, transformationHash: hash, sentRequest: sent };
    },
  };
}

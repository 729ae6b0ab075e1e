import type { Queryable } from '../db/db.ts';
import { newId } from '../db/ids.ts';
import type { Decision } from './retry-policy.ts';
import type { AttemptResult, ClaimedDelivery } from './transport.ts';

/**
 * Records one attempt and moves its delivery on, in ONE statement (so one
 * implicit transaction and one round trip): the attempt row is always
 * written, because the attempt happened; the delivery changes only while
 * this worker still holds the lease it claimed with. Returns whether it did
 * (false: the lease expired and another worker owns the delivery now).
 */
export async function completeAttempt(db: Queryable, d: ClaimedDelivery, r: AttemptResult, decision: Decision, node: string): Promise<boolean> {
  const lastError =
    decision.status === 'succeeded' ? null : [r.errorMessage ?? r.errorClass ?? null, decision.status === 'pending' ? null : decision.reason].filter(Boolean).join('; ') || null;
  const { rows } = await db.query<{ id: string }>(
    `with attempt as (
       insert into delivery_attempts (id, delivery_id, organization_id, attempt_number, node, started_at, duration_ms, url,
                                      status_code, response_headers, response_body, response_body_truncated, error_class, error_message)
       values ($1::uuid, $2::uuid, $3::uuid, $4, $18, $5::timestamptz, $6, $7, $8, $9::jsonb, $10::bytea, $11, $12, $13)
     )
     update deliveries
        set status = $14,
            attempt_count = attempt_count + 1,
            next_attempt_at = case when $14 = 'pending' then now() + $15 * interval '1 second' else next_attempt_at end,
            paced_slot = null, lease_until = null, leased_by = null, lease_id = null,
            last_status_code = $8, last_error = $16, last_attempt_at = $5::timestamptz, updated_at = now()
      where id = $2::uuid and lease_id = $17::uuid and status = 'in_flight'
      returning id`,
    [
      newId(r.startedAt.getTime()),
      d.id,
      d.organizationId,
      d.attemptNumber,
      r.startedAt.toISOString(),
      r.durationMs,
      r.url,
      r.statusCode ?? null,
      r.responseHeaders ? JSON.stringify(r.responseHeaders) : null,
      r.responseBody ?? null,
      r.responseTruncated ?? false,
      r.errorClass ?? null,
      r.errorMessage ?? null,
      decision.status,
      decision.status === 'pending' ? decision.delaySeconds : 0,
      lastError,
      d.leaseId,
      node,
    ],
  );
  return rows.length > 0;
}

/**
 * Ends a delivery that was not attempted (its capture is gone, or its
 * destination was disabled after it was queued): no attempt row, because
 * nothing was sent; the reason is on the delivery.
 */
export async function finishUnattempted(db: Queryable, d: ClaimedDelivery, errorMessage: string): Promise<boolean> {
  const { rows } = await db.query<{ id: string }>(
    `update deliveries
        set status = 'failed', paced_slot = null, lease_until = null, leased_by = null, lease_id = null,
            last_error = $3, updated_at = now()
      where id = $1::uuid and lease_id = $2::uuid and status = 'in_flight'
      returning id`,
    [d.id, d.leaseId, errorMessage],
  );
  return rows.length > 0;
}

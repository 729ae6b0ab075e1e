/*
 * How incidents learn of delivery outcomes: the common table expressions
 * incident_outcome, incident_failure and incident_failure_outcome of the
 * completion statement COMPLETE_ATTEMPTS_RECORDING_INCIDENTS
 * (src/delivery/complete-statement.ts, where they are written out in
 * full), after its CTE `moved` (the deliveries it just moved on,
 * `returning d.*`) and `input` (the attempt outcomes). Being part of that one
 * statement is what makes it exact: a failure is written in the same
 * transaction as the attempt that failed, so a crash can neither lose it
 * nor write it twice, and nothing here takes a lock another worker waits
 * for (each delivery touches only its own failure row). Correlating
 * failures into incidents happens later, in batches (correlate.ts).
 *
 * - a delivery's FIRST failed attempt writes one incident_failures row,
 *   retryable or not (issue 28: an outage shows within seconds, not when
 *   the retries run out), once per (request, destination): a delivery is
 *   counted once per incident however many attempts it makes;
 * - a later failed attempt of the same delivery updates that row (the
 *   newest status code, error and class; `next_attempt_at` while a retry
 *   is left, null once none is), keeping `failed_at`, the first failure;
 *   a failure of another delivery of the pair (a single-request replay
 *   failing again) changes nothing;
 * - a delivery that succeeded marks the failure of its (request,
 *   destination), if any, as recovered (a retry or a replay delivered it),
 *   so no incident replay sends it again;
 * - a delivery queued by an incident replay records its attempt on the
 *   failure it replays (replayed_at, replay_status_code).
 * A capture's own delivery that succeeds on its first attempt cannot
 * concern incidents (outcomeConcernsIncidents), so a group of those, the
 * common case, runs COMPLETE_ATTEMPTS, the statement without these CTEs
 * (test/delivery/complete-statements.test.ts checks that the two agree on
 * which outcomes concern incidents).
 */
/**
 * Whether an outcome needs COMPLETE_ATTEMPTS_RECORDING_INCIDENTS: any failed
 * attempt (`failed`, `dead`, or `pending` for a retry), any replay's
 * delivery (it can recover a failure or be the replay of one), and a
 * success after a failed attempt (it recovers its delivery's failure). A
 * capture's own delivery that succeeds on its first attempt cannot.
 */
export function outcomeConcernsIncidents(status: string, replayBatchId: string | null, attemptNumber: number): boolean {
  return status !== 'succeeded' || replayBatchId !== null || attemptNumber > 1;
}

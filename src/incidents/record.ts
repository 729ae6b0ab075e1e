/**
 * How incidents learn of delivery outcomes: common table expressions the
 * delivery completion statement (src/delivery/complete.ts) appends to its
 * own, after the CTE `moved` (the deliveries it just moved on, `returning
 * d.*`) and `input` (the attempt outcomes). Being part of that one
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
 * common case, runs the completion statement without these CTEs.
 */
export const RECORD_OUTCOMES_FOR_INCIDENTS = `
     incident_outcome as (
       select m.id as delivery_id, m.status, m.organization_id, m.request_id, m.request_received_at, m.endpoint_id, m.forward_destination_id,
              m.destination_type, m.agent_id, coalesce(m.url, 'agent://' || m.agent_id::text) as destination_url,
              case when m.forward_destination_id is not null then 'fd:' || m.forward_destination_id::text
                   else 'url:' || coalesce(m.url, m.agent_id::text) end as scope_key,
              case when m.status = 'pending' then m.next_attempt_at end as next_attempt_at,
              i.attempt_id, i.started_at, i.status_code, i.error_class, i.last_error,
              (select h->>1 from jsonb_array_elements(i.response_headers::jsonb) h where lower(h->>0) = 'retry-after' limit 1) as retry_after
         from moved m join input i on i.delivery_id = m.id
        -- outcomeConcernsIncidents, on the row as written ('pending' after an attempt: it failed and will be retried)
        where m.status in ('failed', 'dead', 'pending') or m.replay_batch_id is not null or (m.status = 'succeeded' and m.attempt_count > 1)
     ),
     incident_failure as (
       -- ON CONFLICT DO UPDATE may touch a row once per statement, and not one another CTE changes: so one
       -- row per pair even when two deliveries of it fail in one batch, and the rows incident_failure_outcome
       -- changes (a pair that also succeeded in this batch, a failure an incident replay re-sent) are left to it
       insert into incident_failures (id, organization_id, delivery_id, request_id, request_received_at, endpoint_id, forward_destination_id, destination_type,
                                      agent_id, scope_key, destination_url, status_code, error_class, error, retry_after_s, failed_at, next_attempt_at)
       select distinct on (o.organization_id, o.request_id, o.scope_key)
              o.attempt_id, o.organization_id, o.delivery_id, o.request_id, o.request_received_at, o.endpoint_id, o.forward_destination_id, o.destination_type,
              o.agent_id, o.scope_key, o.destination_url, o.status_code, o.error_class, o.last_error,
              case when o.retry_after ~ '^[0-9]{1,9}$' then o.retry_after::int end, now(), o.next_attempt_at
         from incident_outcome o
        where o.status in ('failed', 'dead', 'pending')
          and not exists (select 1 from incident_outcome s
                           where s.status = 'succeeded' and s.organization_id = o.organization_id and s.request_id = o.request_id and s.scope_key = o.scope_key)
          and not exists (select 1 from incident_failures r where r.replay_delivery_id = o.delivery_id)
        order by o.organization_id, o.request_id, o.scope_key, o.delivery_id
       on conflict (organization_id, request_id, scope_key) do update
          set status_code = excluded.status_code, error_class = excluded.error_class, error = excluded.error,
              retry_after_s = excluded.retry_after_s, next_attempt_at = excluded.next_attempt_at
        -- only the delivery that failed first moves its row on; a replay of the pair failing again adds nothing
        where incident_failures.delivery_id = excluded.delivery_id and incident_failures.recovered_at is null
     ),
     incident_failure_outcome as (
       update incident_failures f
          set recovered_at = case when o.status = 'succeeded' then coalesce(f.recovered_at, now()) else f.recovered_at end,
              next_attempt_at = case when o.status = 'succeeded' then null else f.next_attempt_at end,
              replayed_at = case when f.replay_delivery_id = o.delivery_id then o.started_at else f.replayed_at end,
              replay_status_code = case when f.replay_delivery_id = o.delivery_id then o.status_code else f.replay_status_code end
         from incident_outcome o
        where f.request_id = o.request_id and f.organization_id = o.organization_id and f.scope_key = o.scope_key
          and (o.status = 'succeeded' or f.replay_delivery_id = o.delivery_id)
     )`;

/**
 * Whether an outcome needs RECORD_OUTCOMES_FOR_INCIDENTS: any failed
 * attempt (`failed`, `dead`, or `pending` for a retry), any replay's
 * delivery (it can recover a failure or be the replay of one), and a
 * success after a failed attempt (it recovers its delivery's failure). A
 * capture's own delivery that succeeds on its first attempt cannot.
 */
export function outcomeConcernsIncidents(status: string, replayBatchId: string | null, attemptNumber: number): boolean {
  return status !== 'succeeded' || replayBatchId !== null || attemptNumber > 1;
}

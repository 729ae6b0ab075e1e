/**
 * How incidents learn of delivery outcomes: common table expressions the
 * delivery completion statement (src/delivery/complete.ts) appends to its
 * own, after the CTE `moved` (the deliveries it just moved on, `returning
 * d.*`) and `input` (the attempt outcomes). Being part of that one
 * statement is what makes it exact: a failure is written in the same
 * transaction as the delivery's final status, so a crash can neither lose
 * it nor write it twice, and nothing here takes a lock another worker
 * waits for (each delivery touches only its own failure row). Correlating
 * failures into incidents happens later, in batches (correlate.ts).
 *
 * - a delivery that ended `failed` or `dead` writes one incident_failures
 *   row, once per (request, destination): a second failure of the same pair
 *   (a single-request replay failing again) adds nothing;
 * - a delivery that succeeded marks the failure of its (request,
 *   destination), if any, as recovered, so no incident replay sends it again;
 * - a delivery queued by an incident replay records its attempt on the
 *   failure it replays (replayed_at, replay_status_code).
 * Nothing else concerns incidents (outcomeConcernsIncidents), so the
 * statement leaves out, and the completion statement runs without these
 * CTEs, a group of retries and successes of capture deliveries: most outcomes.
 */
export const RECORD_OUTCOMES_FOR_INCIDENTS = `
     incident_outcome as (
       select m.id as delivery_id, m.status, m.organization_id, m.request_id, m.request_received_at, m.endpoint_id, m.forward_destination_id,
              m.destination_type, m.agent_id, coalesce(m.url, 'agent://' || m.agent_id::text) as destination_url,
              case when m.forward_destination_id is not null then 'fd:' || m.forward_destination_id::text
                   else 'url:' || coalesce(m.url, m.agent_id::text) end as scope_key,
              i.attempt_id, i.started_at, i.status_code, i.error_class, i.last_error,
              (select h->>1 from jsonb_array_elements(i.response_headers::jsonb) h where lower(h->>0) = 'retry-after' limit 1) as retry_after
         from moved m join input i on i.delivery_id = m.id
        -- outcomeConcernsIncidents, on the row as written
        where m.status in ('failed', 'dead') or m.replay_batch_id is not null
     ),
     incident_failure as (
       insert into incident_failures (id, organization_id, delivery_id, request_id, request_received_at, endpoint_id, forward_destination_id, destination_type,
                                      agent_id, scope_key, destination_url, status_code, error_class, error, retry_after_s, failed_at)
       select attempt_id, organization_id, delivery_id, request_id, request_received_at, endpoint_id, forward_destination_id, destination_type,
              agent_id, scope_key, destination_url, status_code, error_class, last_error,
              case when retry_after ~ '^[0-9]{1,9}$' then retry_after::int end, now()
         from incident_outcome
        where status in ('failed', 'dead')
       on conflict (organization_id, request_id, scope_key) do nothing
     ),
     incident_failure_outcome as (
       update incident_failures f
          set recovered_at = case when o.status = 'succeeded' then coalesce(f.recovered_at, now()) else f.recovered_at end,
              replayed_at = case when f.replay_delivery_id = o.delivery_id then o.started_at else f.replayed_at end,
              replay_status_code = case when f.replay_delivery_id = o.delivery_id then o.status_code else f.replay_status_code end
         from incident_outcome o
        where f.request_id = o.request_id and f.organization_id = o.organization_id and f.scope_key = o.scope_key
          and (o.status = 'succeeded' or f.replay_delivery_id = o.delivery_id)
     )`;


/**
 * Whether an outcome needs RECORD_OUTCOMES_FOR_INCIDENTS: a final failure
 * (`failed`, `dead`) is recorded, and only a replay's delivery can recover
 * a recorded failure or be the replay of one. A capture's own delivery
 * that succeeds or will be retried cannot: a failure is recorded once per
 * (request, destination) when that delivery ends, after which only a
 * replay sends the request there again (capture deliveries are created
 * with their capture, one per destination, and never leave failed/dead).
 */
export function outcomeConcernsIncidents(status: string, replayBatchId: string | null): boolean {
  return status === 'failed' || status === 'dead' || replayBatchId !== null;
}

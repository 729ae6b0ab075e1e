// The completion statements, each written out whole: completeAttempts
// (complete.ts) picks one. Parameters: $1-$17 one array per outcome column
// (see `input`), $18 the node, $19-$21 three more outcome columns: the
// transformation's code hash, the request as sent (src/transformations) and
// the paced slot the claim gave (epoch ms, the database's clock).
// The arrays travel in binary (src/db/binary-arrays.ts, completionParams).
//
// The move of each delivery, the same in both: while the lease it was
// claimed with still holds, the attempt's outcome becomes the delivery's
// state; another try (i.status 'pending') goes through the
// delivery_retry_* functions (migration 0021), which read a replay
// batch's pause or cancel mark: held stays held, cancelled ends failed.

/*
 * ATTEMPTS. An attempt row is written for each outcome whose delivery still
 * exists, in one of two ways that both hold the delivery's row, so a
 * concurrent delete (an endpoint, destination or organization deleted with
 * forwards in flight) either happened first (no attempt: the delivery keeps
 * no history) or waits for this statement to commit and then deletes the
 * attempts with it (the trigger of migration 0026, which replaced the
 * foreign key's check: no orphaned attempt either way):
 * - `moved`: the deliveries this statement moves on, locked by its update;
 * - `kept`: the rest, whose lease was lost meanwhile (rare), locked FOR KEY
 *   SHARE as the foreign key's check did. `= any(array(...))` so an empty
 *   rest costs no probe at all.
 * The attempt's `scheduled_at` is the slot the claim gave (ClaimedDelivery,
 * pacedSlotMs), not read back from the row the update clears.
 */

/*
 * LEASED. The update checks `coalesce(d.status, '') = 'in_flight'` (status
 * is never null: the same test) because the plain `d.status = 'in_flight'`
 * matches the predicate of the partial index deliveries_leased, and the
 * statements are prepared (complete.ts, COMPLETE_SETTINGS): a generic plan
 * that walked that index read an entry for every delivery ever in flight
 * since the last vacuum, on every completion. So the update finds its rows
 * by primary key, as `kept` does.
 */

/** The `kept` and `attempt` CTEs both statements end with (ATTEMPTS, above): they read `input` and `moved`. */
const RECORD_ATTEMPTS = `     -- ATTEMPTS, above
     kept as (
       select d.id from deliveries d
        where d.id = any(array(select i.delivery_id from input i where i.delivery_id <> all(array(select m.id from moved m))))
          for key share
     ),
     attempt as (
       insert into delivery_attempts (id, delivery_id, organization_id, attempt_number, node, started_at, duration_ms, url,
                                      status_code, response_headers, response_body, response_body_truncated, error_class, error_message,
                                      transformation_hash, sent_request, scheduled_at)
       select i.attempt_id, i.delivery_id, i.organization_id, i.attempt_number, $18, i.started_at, i.duration_ms, i.url,
              i.status_code, i.response_headers::jsonb, i.response_body, i.truncated, i.error_class, i.error_message,
              i.transformation_hash, i.sent_request::jsonb,
              -- the slot it waited for, as the claim gave it: whole microseconds from epoch ms
              timestamptz 'epoch' + round(i.paced_slot_ms * 1000) * interval '1 microsecond'
         from input i
        where i.delivery_id in (select m.id from moved m) or i.delivery_id in (select k.id from kept k)
     )`;

/**
 * Records attempts and moves their deliveries on, nothing else: for a
 * group of outcomes none of which concerns incidents
 * (outcomeConcernsIncidents in src/incidents/record.ts: first-attempt
 * successes of capture deliveries, the common case). For such outcomes
 * COMPLETE_ATTEMPTS_RECORDING_INCIDENTS changes nothing more, which
 * test/delivery/complete-statements.test.ts checks.
 */
export const COMPLETE_ATTEMPTS = `with input as (
       select * from unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::int[], $5::timestamptz[], $6::int[], $7::text[], $8::int[],
                            $9::text[], $10::bytea[], $11::bool[], $12::text[], $13::text[], $14::text[], $15::float8[], $16::text[], $17::uuid[],
                            $19::text[], $20::text[], $21::float8[])
         as i(attempt_id, delivery_id, organization_id, attempt_number, started_at, duration_ms, url, status_code,
              response_headers, response_body, truncated, error_class, error_message, status, delay_s, last_error, lease_id,
              transformation_hash, sent_request, paced_slot_ms)
     ),
     moved as (
     update deliveries d
        set status = case when i.status = 'pending' then delivery_retry_status(d.next_attempt_at) else i.status end,
            attempt_count = d.attempt_count + 1,
            next_attempt_at = case when i.status = 'pending' then delivery_retry_due(d.next_attempt_at, now() + i.delay_s * interval '1 second')
                                   else d.next_attempt_at end,
            paced_slot = null, lease_until = null, leased_by = null, lease_id = null,
            last_status_code = i.status_code,
            last_error = case when i.status = 'pending' then delivery_retry_error(d.next_attempt_at, i.last_error) else i.last_error end,
            last_attempt_at = i.started_at, updated_at = now()
       from input i
      -- LEASED, above: a status check no index matches
      where d.id = i.delivery_id and d.lease_id = i.lease_id and coalesce(d.status, '') = 'in_flight'
      returning d.id
     ),
${RECORD_ATTEMPTS}
     select id from moved`;

/**
 * COMPLETE_ATTEMPTS that also records each outcome for incidents in the
 * same statement (crash-safe, counted once: src/incidents/record.ts says
 * what each CTE does and why), and ends the waiting deliveries a
 * successful replay made unnecessary (issue 28, src/delivery/supersede.ts).
 * Every CTE after `moved` reads `moved` (the deliveries just moved on,
 * `returning d.*`) and `input` (the outcomes).
 */
export const COMPLETE_ATTEMPTS_RECORDING_INCIDENTS = `with input as (
       select * from unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::int[], $5::timestamptz[], $6::int[], $7::text[], $8::int[],
                            $9::text[], $10::bytea[], $11::bool[], $12::text[], $13::text[], $14::text[], $15::float8[], $16::text[], $17::uuid[],
                            $19::text[], $20::text[], $21::float8[])
         as i(attempt_id, delivery_id, organization_id, attempt_number, started_at, duration_ms, url, status_code,
              response_headers, response_body, truncated, error_class, error_message, status, delay_s, last_error, lease_id,
              transformation_hash, sent_request, paced_slot_ms)
     ),
     moved as (
     update deliveries d
        set status = case when i.status = 'pending' then delivery_retry_status(d.next_attempt_at) else i.status end,
            attempt_count = d.attempt_count + 1,
            next_attempt_at = case when i.status = 'pending' then delivery_retry_due(d.next_attempt_at, now() + i.delay_s * interval '1 second')
                                   else d.next_attempt_at end,
            paced_slot = null, lease_until = null, leased_by = null, lease_id = null,
            last_status_code = i.status_code,
            last_error = case when i.status = 'pending' then delivery_retry_error(d.next_attempt_at, i.last_error) else i.last_error end,
            last_attempt_at = i.started_at, updated_at = now()
       from input i
      -- LEASED, above: a status check no index matches
      where d.id = i.delivery_id and d.lease_id = i.lease_id and coalesce(d.status, '') = 'in_flight'
      returning d.*
     ),
${RECORD_ATTEMPTS},
     -- incidents see each outcome in this same statement (src/incidents/record.ts)
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
     ),
     -- a replay that succeeded ends its pair's older waiting deliveries, so no worker can claim one
     -- after the success commits (issue 28; src/delivery/supersede.ts); replays always run this statement
     superseded as (
       update deliveries w
          set status = 'superseded', paced_slot = null, updated_at = now(),
              last_error = 'superseded: replay delivery ' || m.id::text || ' delivered this request to this destination'
         from moved m
        where m.status = 'succeeded' and m.replay_batch_id is not null
          and w.request_id = m.request_id and w.organization_id = m.organization_id and w.id < m.id and w.status = 'pending'
          and (w.forward_destination_id = m.forward_destination_id
               or (m.forward_destination_id is null and w.forward_destination_id is null and w.endpoint_id = m.endpoint_id and w.url = m.url))
     )
     select id from moved`;

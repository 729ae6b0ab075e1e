-- Issue 28, items 1 and 2 (docs/incidents.md, docs/forwarding.md).
--
-- An incident failure is now written on a delivery's FIRST failed attempt,
-- while it may still be retried: next_attempt_at is the delivery's next
-- retry while it has one, null once no retry is left (or it recovered, or
-- an incident replay took its place).
alter table incident_failures add column next_attempt_at timestamptz;
-- automatic resolution asks whether an incident still has a retrying failure
create index incident_failures_retrying on incident_failures (incident_id) where next_attempt_at is not null and recovered_at is null;

-- A waiting delivery that a successful replay of the same request to the
-- same destination made unnecessary ends `superseded`, without being sent.
alter table deliveries drop constraint deliveries_status_check;
alter table deliveries add constraint deliveries_status_check
  check (status in ('pending', 'in_flight', 'succeeded', 'failed', 'dead', 'superseded')) not valid;
alter table deliveries validate constraint deliveries_status_check;

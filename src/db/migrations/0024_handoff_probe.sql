-- The capture statement's hand-off (src/ingest/store.ts, HANDOFF;
-- src/delivery/handoff.ts) leases a fresh HTTPS delivery to its node only
-- while no HTTPS delivery is due and waiting. That question is asked here,
-- not in the statement: the capture statement is prepared once per
-- connection, and a generic plan made while deliveries was small (analyzed
-- at a few rows) read the whole table for it, and would have kept doing so
-- as the queue grew. A function's SET clauses hold while its queries are
-- planned, so this one's query walks the partial index deliveries_due
-- (destination_type, next_attempt_at) where status = 'pending', and stops
-- at its first entry, whatever the statistics say (the claim runs under
-- the same two settings: src/delivery/claim.ts, CLAIM_SETTINGS).
create function deliveries_https_waiting() returns boolean
  language plpgsql stable
  set enable_seqscan = off
  set enable_bitmapscan = off
as $$
begin
  return exists (select from deliveries d
                  where d.status = 'pending' and d.destination_type = 'https' and d.next_attempt_at <= now());
end
$$;

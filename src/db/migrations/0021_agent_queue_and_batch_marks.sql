-- Issue 29: the agent claim starts from the connected agents. An agent
-- worker claims only for the agents connected to its node; on
-- deliveries_due (destination_type, next_attempt_at) that filter was a
-- filter, so the claim stepped over every due delivery of every offline or
-- revoked agent before reaching a connected one's (1,000 offline laptops
-- with 1,000 queued forwards each: a million rows per claim). This index
-- is walked once per connected agent, in due order, and each walk stops at
-- the claim's limit (CLAIM_DUE_OF_AGENTS in src/delivery/claim-statement.ts;
-- NEXT_DUE_OF_AGENTS in claim.ts reads each agent's first entry).
--
-- It replaces deliveries_agent_unfinished (agent_id) of migration 0015, with
-- the same rows (what an agent still owes: waiting or handed to it) and
-- next_attempt_at added, so an insert still maintains one agent index. With
-- both, the planner preferred reading a connected agent's whole queue from
-- the old one and sorting it. The revoked-agent sweep reads the first column
-- as before; in-flight rows the claim's walk steps over are bounded by what
-- the agent has in flight.
drop index deliveries_agent_unfinished;
create index deliveries_agent_queue on deliveries (agent_id, next_attempt_at)
  where destination_type = 'agent' and status in ('pending', 'in_flight');

-- The batch marks (src/delivery/replay-batch.ts: HELD_UNTIL, CANCELLED_MARK,
-- CANCELLED_ERROR): what pause and cancel of a replay batch write into
-- next_attempt_at of a delivery in flight. Every statement that takes a
-- delivery out of flight for another try (the completion of an attempt
-- that will be retried, an expired lease, a released lease) reads the mark
-- through these three functions, so the rule is written once:
-- - held (paused batch): the delivery waits, still held, for resume;
-- - cancelled: the delivery ends failed with the cancelled batch's error;
-- - no mark: the delivery is due when the caller says (`due`), keeping the
--   error the caller gives.
-- `mark` is the delivery's next_attempt_at while in flight. Plain SQL
-- expressions, immutable and not strict, so the planner inlines them: no
-- function call per row on the forward hot path.
create function delivery_retry_status(mark timestamptz) returns text
  language sql immutable parallel safe
  as $$ select case when mark = timestamptz '9999-12-31T00:00:00Z' then 'failed' else 'pending' end $$;

create function delivery_retry_due(mark timestamptz, due timestamptz) returns timestamptz
  language sql immutable parallel safe
  as $$ select case when mark >= timestamptz '9999-01-01T00:00:00Z' then mark else due end $$;

create function delivery_retry_error(mark timestamptz, error text) returns text
  language sql immutable parallel safe
  as $$ select case when mark = timestamptz '9999-12-31T00:00:00Z' then 'the replay batch was cancelled' else error end $$;

-- The deliveries an agent still owes (waiting or handed to it), by agent:
-- what fails a revoked agent's deliveries (src/delivery/revoked-agent.ts)
-- reads, at revocation and in the sweep, without walking the queue.
create index deliveries_agent_unfinished on deliveries (agent_id)
  where destination_type = 'agent' and status in ('pending', 'in_flight');

-- GET /v1/usage counts the days not rolled up yet from the tables: one
-- organization's attempts and replays, read through indexes that start with
-- the organization instead of every tenant's rows of those days (the block
-- range index on started_at narrows by time only).
create index delivery_attempts_org_started on delivery_attempts (organization_id, started_at);
create index deliveries_org_replayed on deliveries (organization_id, created_at) where replay_batch_id is not null;


-- When a replay batch last started running (created or resumed): the
-- supervisor's "last attempts all failed" looks only at attempts since
-- then, so failures recorded before a pause cannot pause a resumed batch
-- again before it sent anything.
alter table replay_batches add column running_since timestamptz;

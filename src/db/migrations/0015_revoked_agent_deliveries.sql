-- The deliveries an agent still owes (waiting or handed to it), by agent:
-- what fails a revoked agent's deliveries (src/delivery/revoked-agent.ts)
-- reads, at revocation and in the sweep, without walking the queue.
create index deliveries_agent_unfinished on deliveries (agent_id)
  where destination_type = 'agent' and status in ('pending', 'in_flight');

-- The agent link (src/agents/gateway.ts): which connection currently holds an
-- agent, on which node, and when that node last vouched for it. Any node can
-- answer "is this agent connected?" from the row, and every node can see
-- that its own socket was superseded, re-issued or revoked.
alter table agents
  -- a fresh id per accepted connection; null while disconnected. A node whose
  -- socket's id no longer matches closes that socket.
  add column connection_id uuid,
  add column connected_node text,
  add column connected_at timestamptz,
  -- refreshed by the holding node every few seconds; a row whose heartbeat is
  -- stale counts as disconnected (the node died without saying so)
  add column heartbeat_at timestamptz,
  -- what the agent reported when it connected
  add column agent_version text,
  add column hostname text;

-- The claim walks this index in due order and stops after a batch. Keyed by
-- destination type first, so that the HTTPS workers never walk the deliveries
-- of agents that are offline (a production agent's queue waits, in capture
-- order, for as long as it is away: tens of thousands of rows), and an agent
-- worker never walks HTTPS rows. Measured on PGlite: with 60,000 waiting agent
-- deliveries ahead of them, an HTTPS claim took 3x as long on the old index.
drop index deliveries_due;
create index deliveries_due on deliveries (destination_type, next_attempt_at) where status = 'pending';

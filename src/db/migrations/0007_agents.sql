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

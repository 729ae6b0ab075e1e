-- When a worker's next delivery falls due (src/delivery/claim.ts,
-- nextDueAt): asked after every claim that leaves nothing due, as a
-- prepared statement that keeps one generic plan for the connection's life.
-- Planned inline, with deliveries analyzed at a few rows (a new install,
-- a quiet node), that plan read the whole table: for the agents' question
-- once per connected agent. It would have kept doing so as the table grew
-- with history. Each question is asked here instead, under the same two
-- settings the claim runs with (CLAIM_SETTINGS), so it walks its queue's
-- partial index and stops at the first entry, whatever the statistics say
-- (the same reason as deliveries_https_waiting, migration 0024).

-- The earliest due time of a destination type's waiting deliveries: the first entry of deliveries_due.
create function deliveries_next_due(kind text) returns timestamptz
  language plpgsql stable
  set enable_seqscan = off
  set enable_bitmapscan = off
as $$
begin
  return (select d.next_attempt_at from deliveries d
           where d.status = 'pending' and d.destination_type = kind
           order by d.next_attempt_at limit 1);
end
$$;

-- The earliest due time of these agents' waiting deliveries: the first entry of each one's
-- deliveries_agent_queue, never another agent's backlog.
create function deliveries_next_due_of_agents(agent_ids uuid[]) returns timestamptz
  language plpgsql stable
  set enable_seqscan = off
  set enable_bitmapscan = off
as $$
begin
  return (select min(first.at)
            from (select distinct unnest(agent_ids)) as a(agent_id)
           cross join lateral (select q.next_attempt_at as at from deliveries q
                                where q.status = 'pending' and q.destination_type = 'agent' and q.agent_id = a.agent_id
                                order by q.next_attempt_at limit 1) first);
end
$$;

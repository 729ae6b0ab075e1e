-- Where each incident replay batch stands, kept up to date by the changes
-- themselves, so the replay supervisor reads what changed since its last
-- tick instead of every delivery of every running batch (issue 29).
--
-- A batch's deliveries are counted when the batch is created, in the
-- transaction that inserts them (src/delivery/replay-batch.ts,
-- createReplayBatch). Every later change of such a delivery's status (or
-- a new attempt) appends one row to replay_batch_changes from a trigger,
-- in the transaction that makes the change; the supervisor folds those
-- rows into replay_batch_progress (delete ... returning, then add, in one
-- statement). So a change and its count commit or roll back together,
-- whichever statement or node made it, and each is folded exactly once.

create table replay_batch_progress (
  replay_batch_id uuid primary key references replay_batches(id) on delete cascade,
  -- pending or in flight
  waiting integer not null,
  succeeded integer not null default 0,
  -- failed or dead
  failed integer not null default 0,
  -- attempts in a row that failed, among those started since the batch
  -- last started running (replay_batches.running_since): what pauses it
  failed_streak integer not null default 0
);

create table replay_batch_changes (
  id bigint generated always as identity primary key,
  replay_batch_id uuid not null,
  waiting integer not null,
  succeeded integer not null,
  failed integer not null,
  -- set when the change is an attempt's outcome: when it started, whether it succeeded
  attempt_at timestamptz,
  attempt_ok boolean
);
-- exact progress between two folds: the folded counts plus a batch's few unfolded rows
create index replay_batch_changes_batch on replay_batch_changes (replay_batch_id);

create function replay_batch_change() returns trigger language plpgsql as $$
declare
  b uuid := old.replay_batch_id;
  w integer := -(old.status in ('pending', 'in_flight'))::int;
  s integer := -(old.status = 'succeeded')::int;
  f integer := -(old.status in ('failed', 'dead'))::int;
  at timestamptz;
  ok boolean;
begin
  -- only incident replay batches are counted (a single request's replay has a batch id but no batch)
  if not exists (select 1 from replay_batch_progress p where p.replay_batch_id = b) then
    return null;
  end if;
  if tg_op = 'UPDATE' then
    w := w + (new.status in ('pending', 'in_flight'))::int;
    s := s + (new.status = 'succeeded')::int;
    f := f + (new.status in ('failed', 'dead'))::int;
    if new.attempt_count > old.attempt_count then
      at := new.last_attempt_at;
      ok := new.status = 'succeeded';
    end if;
  end if;
  if w = 0 and s = 0 and f = 0 and at is null then
    return null;
  end if;
  insert into replay_batch_changes (replay_batch_id, waiting, succeeded, failed, attempt_at, attempt_ok) values (b, w, s, f, at, ok);
  return null;
end
$$;

-- The WHEN clauses keep every other delivery's update at the cost of one
-- comparison: the function runs only for a replay's deliveries.
create trigger deliveries_replay_batch_changed after update of status, attempt_count on deliveries
  for each row when (old.replay_batch_id is not null
                     and (old.status is distinct from new.status or old.attempt_count is distinct from new.attempt_count))
  execute function replay_batch_change();
create trigger deliveries_replay_batch_deleted after delete on deliveries
  for each row when (old.replay_batch_id is not null)
  execute function replay_batch_change();

-- batches from before this migration: counted once, from their deliveries
insert into replay_batch_progress (replay_batch_id, waiting, succeeded, failed)
select b.id,
       count(d.id) filter (where d.status in ('pending', 'in_flight')),
       count(d.id) filter (where d.status = 'succeeded'),
       count(d.id) filter (where d.status in ('failed', 'dead'))
  from replay_batches b left join deliveries d on d.replay_batch_id = b.id
 group by b.id;

-- Events that never miss one (docs/subscriptions.md, "Guarantees").

-- request.captured outbox: the capture statement (src/ingest/store.ts)
-- writes one row per capture of an endpoint that a request.captured
-- subscription covers, in the statement that stores the capture, so the
-- row commits with the capture or not at all. The producer
-- (src/subscriptions/capture-events.ts) turns rows into events and deletes
-- them in one transaction. No foreign keys: the hot path checks nothing
-- more; a row whose capture is gone is simply dropped by the producer.
create table capture_announcements (
  capture_id uuid primary key,
  organization_id uuid not null,
  endpoint_id uuid not null,
  received_at timestamptz not null
);

-- The capture statement's question, once per endpoint of a group: does a
-- live request.captured subscription cover it? An organization without one
-- finds nothing in this (small) index.
create index subscriptions_capture on subscriptions (organization_id)
  where 'request.captured' = any(event_types) and status <> 'unsubscribed';

-- Fair claim (src/subscriptions/queue.ts): the claim reads subscriptions,
-- not events. events_due_at is when this subscription's earliest pending
-- event comes due (null: none pending); event_in_flight says one of its
-- events is being sent (one at a time per subscription, across nodes).
alter table subscriptions
  add column events_due_at timestamptz,
  add column event_in_flight boolean not null default false;
create index subscriptions_events_due on subscriptions (events_due_at)
  where events_due_at is not null and not event_in_flight;
-- a subscription's next event and its earliest due time
create index subscription_events_pending on subscription_events (subscription_id, seq) where status = 'pending';

update subscriptions s
   set event_in_flight = exists (select 1 from subscription_events e where e.subscription_id = s.id and e.status = 'in_flight'),
       events_due_at = (select min(e.next_attempt_at) from subscription_events e where e.subscription_id = s.id and e.status = 'pending');

-- Retention (src/subscriptions/retention.ts): finished events by age.
create index subscription_events_finished on subscription_events (created_at) where status in ('succeeded', 'failed', 'dead');

-- Captures the time cursor had not reached yet are handed to the outbox
-- (a re-announcement is skipped by the unique index on the event's source).
insert into capture_announcements (capture_id, organization_id, endpoint_id, received_at)
select distinct c.id, c.organization_id, c.endpoint_id, c.received_at
  from subscriptions s
  join captured_requests c
    on c.organization_id = s.organization_id and (s.endpoint_id is null or c.endpoint_id = s.endpoint_id)
   -- a UUIDv7's first 48 bits are its millisecond: the cursor's, or the subscription's creation
   and c.received_at >= to_timestamp(('x' || substr(replace(coalesce(s.capture_cursor, s.id)::text, '-', ''), 1, 12))::bit(48)::bigint / 1000.0)
   and (s.capture_cursor is null or c.id > s.capture_cursor)
 where 'request.captured' = any(s.event_types) and s.status <> 'unsubscribed'
on conflict do nothing;

alter table subscriptions drop column capture_cursor;

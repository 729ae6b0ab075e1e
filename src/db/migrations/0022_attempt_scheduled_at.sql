-- The dispatch slot a rate-limited (or paced replay) attempt waited for:
-- deliveries.paced_slot at the time, which the completion statement clears
-- once the attempt is recorded. Shown on each attempt as `scheduled_at`, so
-- a user can see that a forward left late because of its destination's rate
-- limit, and tests can check the schedule Weir computed rather than when
-- requests happened to arrive. Null: the attempt was not paced. A nullable
-- column without a default adds no rewrite.
alter table delivery_attempts add column scheduled_at timestamptz;

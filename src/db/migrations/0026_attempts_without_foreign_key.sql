-- A delivery's attempts go with it, as before, but by one statement-level
-- trigger instead of the foreign key delivery_attempts.delivery_id.
--
-- Why: the foreign key's check ran once per attempt inserted, a query that
-- locked the delivery the same completion had just updated (FOR KEY SHARE),
-- writing its tuple a second time and a WAL record more: about 14 µs of
-- PostgreSQL's CPU a forward, and 10-13 µs of PGlite's (docs/forwarding.md,
-- "The attempts' foreign key replaced"). Its ON DELETE CASCADE ran one
-- query per deleted delivery.
--
-- What the key guaranteed, and what keeps it now:
-- - No attempt outlives its delivery: this trigger deletes the attempts of
--   every statement's deleted deliveries (also those an endpoint's,
--   destination's or organization's deletion cascades to), in one delete by
--   delivery_attempts_delivery.
-- - No attempt is written for a delivery being deleted: the completion
--   statements (src/delivery/complete-statement.ts) insert attempts only for
--   the deliveries they moved (their update holds the row lock, so a delete
--   waits for the completion to commit and this trigger then sees its
--   attempts) and for the rest locked FOR KEY SHARE as the key's check did
--   (a lease lost meanwhile: rare). A delivery already deleted gets none.
alter table delivery_attempts drop constraint delivery_attempts_delivery_id_fkey;

create function delete_attempts_of_deleted_deliveries() returns trigger
  language plpgsql
as $$
begin
  delete from delivery_attempts a where a.delivery_id = any(array(select g.id from gone g));
  return null;
end
$$;

create trigger deliveries_attempts_deleted after delete on deliveries
  referencing old table as gone
  for each statement execute function delete_attempts_of_deleted_deliveries();

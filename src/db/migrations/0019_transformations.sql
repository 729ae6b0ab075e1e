-- Issue 27: transformations (docs/transformations.md).
--
-- A forward destination's transformation: null (forward what arrived) or
-- {code}, JavaScript defining function handler(request, context), checked
-- to compile (src/transformations/sandbox.ts) before it is written. The
-- delivery worker reads it at claim time, so a retry or a replay runs the
-- code as it is then.
alter table forward_destinations add column transformation jsonb;

-- Each attempt a transformation ran for: the sha256 of the code version it
-- ran, and the request as sent ({method, url, path, query, headers, body
-- base64}, bounded by WEIR_MAX_BODY_BYTES), because the code may change
-- after (GET /v1/requests/:id/forwards/:delivery_id/transformed). Null on
-- attempts without a transformation; nullable columns add no rewrite.
alter table delivery_attempts add column transformation_hash text;
alter table delivery_attempts add column sent_request jsonb;

-- `skipped`: the transformation returned null, so the delivery ended
-- without an attempt. `filtered` is the routing filter's (issue 26); the
-- full list is set here so either migration may run first.
alter table deliveries drop constraint deliveries_status_check;
alter table deliveries add constraint deliveries_status_check
  check (status in ('pending', 'in_flight', 'succeeded', 'failed', 'dead', 'superseded', 'filtered', 'skipped')) not valid;
alter table deliveries validate constraint deliveries_status_check;

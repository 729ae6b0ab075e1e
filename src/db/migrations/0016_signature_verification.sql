-- Issue 25: per-endpoint signature verification (docs/verification.md).
--
-- The settings without the secrets, {provider, enforce, tolerance_seconds,
-- header, algorithm, encoding, prefix}; null: the endpoint verifies nothing.
-- Validated by src/verification/settings.ts before it is written.
alter table endpoints add column verification jsonb;
-- The signing secrets in their own columns, never in `verification`, so no
-- read of the settings can carry one: only the ingest lookup
-- (findIngestTarget) selects them, and reads show right(secret, 4). They are
-- plaintext because an HMAC needs the key itself (as subscriptions.secret).
-- After a rotation the previous secret verifies too, until
-- verification_previous_expires_at.
alter table endpoints add column verification_secret text;
alter table endpoints add column verification_previous_secret text;
alter table endpoints add column verification_previous_expires_at timestamptz;

-- What verification said of a capture, written by the capture statement
-- itself (src/ingest/store.ts): null for an endpoint without verification,
-- else 'verified' or 'failed' with a reason. `rejected`: enforce refused it
-- (the sender got 401); it is stored but neither forwarded nor announced.
-- Nullable columns and a constant default add no rewrite of the table.
alter table captured_requests add column verification_status text;
alter table captured_requests add column verification_reason text;
alter table captured_requests add column rejected boolean not null default false;

-- Destination URLs no longer carry credentials (issue 23, defect 4): a URL's
-- user:password@ was never sent (Weir does not do basic auth to
-- destinations), yet every role, viewers included, could read it in
-- destination lists, incidents and the forwards list. New URLs with
-- credentials are refused (src/delivery/target-url.ts); this strips them from
-- the rows already stored, and records each destination it changed in its
-- organization's audit log (action destination.credentials_removed, actor
-- system) so an operator can tell the owner to rotate that password.
--
-- The userinfo is everything between "scheme://" and the last "@" before the
-- first "/", "?" or "#". Rows without one are not rewritten.

-- Saved and attached destinations: audited.
insert into audit_log (id, organization_id, actor_type, actor_id, action, target_type, target_id, target_name, details)
select gen_random_uuid(), organization_id, 'system', null, 'destination.credentials_removed', 'destination', id, name,
       jsonb_build_object('table', 'destinations')
  from destinations where url ~ '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*@';
insert into audit_log (id, organization_id, actor_type, actor_id, action, target_type, target_id, target_name, details)
select gen_random_uuid(), organization_id, 'system', null, 'destination.credentials_removed', 'forward_destination', id, name,
       jsonb_build_object('table', 'forward_destinations', 'endpoint_id', endpoint_id)
  from forward_destinations where url ~ '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*@';

update destinations set url = regexp_replace(url, '^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#]*@', '\1'), updated_at = now()
 where url ~ '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*@';
update forward_destinations set url = regexp_replace(url, '^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#]*@', '\1'), updated_at = now()
 where url ~ '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*@';

-- The copies shown with forwards and incidents: stripped the same way.
update deliveries set url = regexp_replace(url, '^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#]*@', '\1')
 where url ~ '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*@';
update delivery_attempts set url = regexp_replace(url, '^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#]*@', '\1')
 where url ~ '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*@';
update incident_failures set destination_url = regexp_replace(destination_url, '^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#]*@', '\1')
 where destination_url ~ '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*@';
update incidents set destination_url = regexp_replace(destination_url, '^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#]*@', '\1')
 where destination_url ~ '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*@';

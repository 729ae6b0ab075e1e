import { codeHash } from '../transformations/hash.ts';
import type { ForwardDestination } from './forward-destinations.ts';
import type { Attachment, SavedDestination } from './saved-destinations.ts';

/** A saved destination as the API shows it (the organization id is implied by the key). */
export function presentSaved(d: SavedDestination) {
  return {
    id: d.id,
    name: d.name,
    url: d.url,
    visibility: d.visibility,
    is_reusable: d.is_reusable,
    created_by: d.created_by,
    created_at: d.created_at,
    updated_at: d.updated_at,
  };
}

export function presentSavedWithEndpoints(d: SavedDestination, endpoints: Attachment[]) {
  return { ...presentSaved(d), endpoints };
}

/**
 * A forward destination as the API shows it. Retry settings are null on
 * agent destinations: agents retry by environment, and a stored default
 * shown there would suggest it applied.
 */
export function presentForward(d: ForwardDestination) {
  const https = d.destination_type === 'https';
  return {
    id: d.id,
    endpoint_id: d.endpoint_id,
    name: d.name,
    destination_type: d.destination_type,
    url: d.url,
    agent_id: d.agent_id,
    target_port: d.target_port,
    target_path: d.target_path,
    enabled: d.enabled,
    method_override: d.method_override,
    environment_override: d.environment_override,
    sort_order: d.sort_order,
    saved_destination_id: d.saved_destination_id,
    retry_enabled: https ? d.retry_enabled : null,
    retry_schedule: https ? d.retry_schedule : null,
    intelligent_retry: https ? d.intelligent_retry : null,
    rate_limit_enabled: d.rate_limit_enabled,
    rate_limit_per_minute: d.rate_limit_per_minute,
    filter: d.filter ?? null,
    transformation: d.transformation ? { code: d.transformation.code, hash: codeHash(d.transformation.code) } : null,
    created_at: d.created_at,
    updated_at: d.updated_at,
  };
}

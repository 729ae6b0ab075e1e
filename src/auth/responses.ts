import { answer, type JsonSchema, dataOf, listOf, noContent, nullableStr, nullableTime, nullableUuid, num, object, oneOfStrings, openObject, pageOf, str, time, uuid } from '../http/responses.ts';
import { planLimitsSchema } from '../orgs/responses.ts';
import { PLAN_NAMES } from '../orgs/plans.ts';
import { PERMISSIONS, ROLES, SCOPES } from './permissions.ts';

const scopes = { type: 'array', items: { type: 'string', enum: [...SCOPES] } } as const;

/** A key as presentApiKey writes it: never the key itself, except once at creation. */
export const apiKeySchema = object(
  {
    id: uuid,
    name: str,
    display_prefix: { type: 'string', description: 'The start of the key, to recognise it by.' },
    organization_id: uuid,
    member_id: uuid,
    access_mode: oneOfStrings(['full', 'custom']),
    scopes,
    expires_at: nullableTime,
    revoked_at: nullableTime,
    last_used_at: nullableTime,
    created_by: nullableUuid,
    created_at: time,
  },
  {
    example: {
      id: '0193a8c2-0000-7000-8000-000000000003',
      name: 'CI',
      display_prefix: 'wr_live_us_4f9a',
      organization_id: '0193a8c2-0000-7000-8000-000000000001',
      member_id: '0193a8c2-0000-7000-8000-000000000002',
      access_mode: 'custom',
      scopes: ['endpoints:read', 'requests:read'],
      expires_at: null,
      revoked_at: null,
      last_used_at: '2026-01-02T10:00:00.000Z',
      created_by: '0193a8c2-0000-7000-8000-000000000002',
      created_at: '2026-01-01T00:00:00.000Z',
    },
  },
);

/** At creation only: the key itself, shown this once. */
export const newApiKeySchema = object({ ...(apiKeySchema.properties as object), key: { type: 'string', description: 'The API key. Shown only in this answer.' } } as never);

export const auditEntrySchema = object({
  id: uuid,
  organization_id: uuid,
  actor_type: oneOfStrings(['operator', 'member', 'system']),
  actor_id: nullableUuid,
  action: { type: 'string', description: 'e.g. `api_key.created`, `member.role_changed`.' },
  target_type: str,
  target_id: nullableStr,
  target_name: nullableStr,
  details: openObject('What changed, by action (docs/auth.md).'),
  created_at: time,
});

const meSchema = object({
  organization: object({ id: uuid, name: str, plan: oneOfStrings(PLAN_NAMES), region: str, limits: planLimitsSchema }),
  member: object({ id: uuid, email: str, role: oneOfStrings(ROLES) }),
  api_key: object({
    id: uuid,
    name: str,
    access_mode: oneOfStrings(['full', 'custom']),
    scopes,
    expires_at: nullableTime,
    effective_role: { ...oneOfStrings(ROLES), description: "The role the key acts with: its owner's, lowered to its creator's when another member minted it." },
  }),
  permissions: { type: 'array', items: { type: 'string', enum: Object.keys(PERMISSIONS) } },
});

const healthSchema = object({
  status: oneOfStrings(['ok', 'degraded']),
  version: str,
  database: object({ kind: oneOfStrings(['pglite', 'postgres']), reachable: { type: 'boolean' }, latency_ms: num }),
  notifications: oneOfStrings(['connected', 'reconnecting']),
});

export const authResponses = {
  me: answer(200, 'Who the key is: organization, member, key and the permissions it acts with.', dataOf(meSchema)),
  health: {
    ...answer(200, 'The node and its database answer.', dataOf(healthSchema)),
    503: { description: 'The database does not answer (`status: degraded`).', ...dataOf(healthSchema) },
  } as Record<string, JsonSchema>,
  keys: answer(200, "The caller's keys (every member's with api_keys.manage), unpaged.", listOf(apiKeySchema)),
  keyCreated: answer(201, 'The new key, with `key` shown this once.', dataOf(newApiKeySchema)),
  keyUpdated: answer(200, 'The key with its new access.', dataOf(apiKeySchema)),
  keyRevoked: noContent('Revoked: the key answers 401 from the next request on.'),
  audit: answer(200, 'A page of the audit log, newest first.', pageOf(auditEntrySchema)),
};

import { ROLES } from '../auth/permissions.ts';
import type { Member } from './members.ts';
import type { Organization } from './organizations.ts';

/** An organization as the API shows it. */
export function presentOrganization(o: Organization) {
  return { id: o.id, name: o.name, plan: o.plan, region: o.region, created_at: o.created_at, updated_at: o.updated_at };
}

/** A member as the API shows it: never the password hash. */
export function presentMember(m: Member) {
  return {
    id: m.id,
    organization_id: m.organization_id,
    email: m.email,
    role: m.role,
    active: m.active,
    created_at: m.created_at,
    updated_at: m.updated_at,
  };
}

/**
 * JSON schema of a member invitation (POST /v1/members). The operator API
 * also takes an initial `password`; a member inviting a colleague does not
 * choose the colleague's password.
 */
export const memberInviteSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['email', 'role'],
  properties: {
    email: { type: 'string', minLength: 3, maxLength: 320 },
    role: { type: 'string', enum: ROLES },
  },
} as const;

/** JSON schema of a member change (role, active), shared by /v1/members/:id and the operator API. */
export const memberPatchSchema = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    role: { type: 'string', enum: ROLES },
    active: { type: 'boolean' },
  },
} as const;

/**
 * Roles, permissions and scopes: the one place that says who may do what.
 * docs/auth.md renders this table for people; a test checks they agree.
 */
export const ROLES = ['super_admin', 'admin', 'developer', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

const ALL: readonly Role[] = ROLES;
const WRITERS: readonly Role[] = ['super_admin', 'admin', 'developer'];
const ADMINS: readonly Role[] = ['super_admin', 'admin'];

/** Permission -> roles that hold it. Viewers hold only view permissions (and may mint read-only keys for themselves). */
export const PERMISSIONS = {
  'endpoints.view': ALL,
  'endpoints.create': WRITERS,
  'endpoints.edit': WRITERS,
  'endpoints.delete': ADMINS,
  'destinations.view': ALL,
  'agents.view': ALL,
  'agents.assign_destination': WRITERS,
  'agents.manage': ADMINS,
  'requests.view': ALL,
  'requests.replay': WRITERS,
  'incidents.view': ALL,
  'incidents.update': WRITERS,
  'incidents.replay': WRITERS,
  'subscriptions.view': ALL,
  'subscriptions.manage': WRITERS,
  'members.view': ALL,
  'members.invite': ADMINS,
  'members.manage': ADMINS,
  'usage.view': ALL,
  'api_keys.manage_own': ALL,
  'api_keys.manage': ADMINS,
  'audit_log.view': ADMINS,
} as const satisfies Record<string, readonly Role[]>;

export type Permission = keyof typeof PERMISSIONS;

export function isRole(v: unknown): v is Role {
  return typeof v === 'string' && (ROLES as readonly string[]).includes(v);
}

export function roleHas(role: Role, permission: Permission): boolean {
  return (PERMISSIONS[permission] as readonly Role[]).includes(role);
}

/**
 * Roles are nested: each holds every permission of the roles below it (a
 * test checks PERMISSIONS keeps it so). The rank is what "no escalation"
 * compares: nobody grants, or mints a key acting as, a role above their own.
 */
const RANK: Record<Role, number> = { viewer: 0, developer: 1, admin: 2, super_admin: 3 };

export function outranks(a: Role, b: Role): boolean {
  return RANK[a] > RANK[b];
}

/** The lower of two roles: what a key created by one member for another may do. */
export function lowerRole(a: Role, b: Role): Role {
  return RANK[a] <= RANK[b] ? a : b;
}

/** The scopes of the specification's table, in its order. */
export const SCOPES = [
  'endpoints:read',
  'endpoints:write',
  'requests:read',
  'requests:replay',
  'destinations:read',
  'destinations:write',
  'subscriptions:read',
  'subscriptions:write',
  'incidents:read',
  'incidents:write',
  'members:invite',
  'members:manage',
  'usage:read',
] as const;
export type Scope = (typeof SCOPES)[number];

export function isScope(v: unknown): v is Scope {
  return typeof v === 'string' && (SCOPES as readonly string[]).includes(v);
}

/** The dashboard's "Read + Notify" preset. */
export const READ_NOTIFY_PRESET: readonly Scope[] = [
  'endpoints:read',
  'requests:read',
  'destinations:read',
  'incidents:read',
  'subscriptions:read',
  'subscriptions:write',
];

export type AccessMode = 'full' | 'custom';

/** Why a scope set is refused for a custom key, or undefined when it is acceptable. */
export function scopeSetProblem(accessMode: AccessMode, scopes: readonly string[]): string | undefined {
  const unknown = scopes.filter((s) => !isScope(s));
  if (unknown.length > 0) return `Unknown scope${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}; the scopes are ${SCOPES.join(', ')}.`;
  if (accessMode === 'full') {
    return scopes.length > 0 ? 'A full-access key takes no scopes; use access_mode "custom" to narrow it.' : undefined;
  }
  if (scopes.length === 0) return 'A custom-scope key needs at least one scope: with none it could call no scoped route.';
  if (scopes.includes('requests:replay') && !scopes.includes('requests:read')) return 'The scope requests:replay requires requests:read.';
  return undefined;
}

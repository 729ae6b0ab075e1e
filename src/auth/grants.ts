import { outranks, type Role } from './permissions.ts';

/**
 * Who may grant what: the one rule behind every write that can widen what
 * somebody can do. A security probe found a key edit that skipped the rank
 * check its creation had (issue 23), so every such write asks this function
 * and none carries its own copy:
 * - creating a key for a member, and changing a key's access mode, scopes or
 *   expiry (`key`): the actor may touch keys only of members who do not
 *   outrank them, since whoever edits a key could have minted it;
 * - inviting a member, changing a member's role or active flag (`member`):
 *   the actor may not touch a member who outranks them, nor give anyone a
 *   role above their own.
 * `actorRole` is the acting key's live (effective) role; the operator API and
 * the command line act with no rank (undefined), bounded only by the other
 * rules (scope sets, the last super_admin).
 */
export type Grant =
  /** Create a key for, or change a key of, a member holding `ownerRole`. */
  | { kind: 'key'; ownerRole: Role; verb: 'create' | 'change' }
  /** Invite a member (`currentRole` absent), or change one, possibly to `newRole`. */
  | { kind: 'member'; currentRole?: Role; newRole?: Role };

/** Why an actor of `actorRole` may not make this grant (a sentence for a 403), or undefined when they may. */
export function grantProblem(actorRole: Role | undefined, grant: Grant): string | undefined {
  if (actorRole === undefined) return undefined;
  if (grant.kind === 'key') {
    if (outranks(grant.ownerRole, actorRole)) return `A ${actorRole} cannot ${grant.verb === 'create' ? 'create keys for' : 'change the keys of'} a ${grant.ownerRole}.`;
    return undefined;
  }
  if (grant.currentRole !== undefined && outranks(grant.currentRole, actorRole)) return `A ${actorRole} cannot change a ${grant.currentRole}.`;
  if (grant.newRole !== undefined && outranks(grant.newRole, actorRole)) {
    return grant.currentRole === undefined ? `A ${actorRole} cannot invite a ${grant.newRole}.` : `A ${actorRole} cannot grant the role ${grant.newRole}.`;
  }
  return undefined;
}

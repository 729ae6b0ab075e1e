import type { AuthContext } from './authenticate.ts';
import { roleHas, type Permission, type Scope } from './permissions.ts';

// Which keys may call which route: an auth rule, so it lives here, below
// both users of it: the /v1 hook (src/http/route-auth.ts) and the live
// tail's re-checks of open streams (src/requests/tail-access.ts).

/**
 * What a /v1 route requires, declared beside the route as data
 * (`config: { auth: {...} }`) and enforced by one hook:
 * - `scopes`: every listed scope must be granted to a custom-scope key
 *   (full-access keys skip the scope check, as the specification says);
 * - `permission`: the key's live role must hold it (its owner's role, lowered
 *   to its creator's when another member minted it: see Authenticator);
 * - `fullAccessOnly`: key management is closed to custom-scope keys;
 * - `anyKey`: any valid key, no scope (GET /v1/me, GET /v1/health).
 * A route that declares nothing is refused: the default is closed.
 */
export type RouteAuth =
  | { anyKey: true }
  | { scopes: readonly Scope[]; permission?: Permission; fullAccessOnly?: false }
  | { scopes?: readonly Scope[]; permission?: Permission; fullAccessOnly: true };

/** Why ctx may not call a route declaring `rule`, or undefined when it may. */
export function authorizationProblem(ctx: AuthContext, rule: RouteAuth | undefined): string | undefined {
  if (!rule) return 'This route is not available to API keys.';
  if ('anyKey' in rule) return undefined;
  if (rule.fullAccessOnly && ctx.accessMode !== 'full') return 'This route needs a full-access key.';
  if (ctx.accessMode === 'custom') {
    const missing = (rule.scopes ?? []).filter((s) => !ctx.scopes.includes(s));
    if (missing.length > 0) return `This key lacks the scope${missing.length > 1 ? 's' : ''} ${missing.join(', ')}.`;
  }
  if (rule.permission && !roleHas(ctx.role, rule.permission)) {
    return `This key acts with the role ${ctx.role}, which lacks the permission ${rule.permission}.`;
  }
  return undefined;
}

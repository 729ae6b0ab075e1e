import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AuthContext, Authenticator } from '../auth/authenticate.ts';
import { roleHas, type Permission, type Scope } from '../auth/permissions.ts';
import { forbidden, unauthorized } from './errors.ts';

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

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: RouteAuth;
  }
  interface FastifyRequest {
    auth: AuthContext;
  }
}

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

/** Installs the authentication and authorization hook on a plugin scope (the /v1 routes). */
export function installRouteAuth(app: FastifyInstance, authenticator: Authenticator): void {
  app.decorateRequest('auth', null as unknown as AuthContext);
  app.addHook('onRequest', async (request: FastifyRequest) => {
    const ctx = await authenticator.authenticate(request.headers.authorization);
    if (!ctx) throw unauthorized();
    const problem = authorizationProblem(ctx, request.routeOptions.config.auth);
    if (problem) throw forbidden(problem);
    request.auth = ctx;
    request.log = request.log.child({ org: ctx.organizationId, key: ctx.keyId });
  });
}

import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AuthContext, Authenticator } from '../auth/authenticate.ts';
import { authorizationProblem, type RouteAuth } from '../auth/route-access.ts';
import { forbidden, unauthorized } from './errors.ts';

// A route declares what it requires as `config: { auth: RouteAuth }`; the
// rule itself (which key may call it) is src/auth/route-access.ts.
declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: RouteAuth;
  }
  interface FastifyRequest {
    auth: AuthContext;
  }
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

import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../http/deps.ts';
import { getUsage } from './usage.ts';
import { usageResponses as R } from './responses.ts';

/** GET /v1/usage (docs/usage.md). */
export function usageRoutes(app: FastifyInstance, { db, config }: AppDeps): void {
  app.get('/usage', { config: { auth: { scopes: ['usage:read'], permission: 'usage.view' } }, schema: { response: R.usage } }, async (request) => {
    const { organizationId, plan } = request.auth;
    return { data: await getUsage(db, { id: organizationId, plan }, config.plans[plan]) };
  });
}

import type { FastifyInstance } from 'fastify';
import { adminTokenMatches } from '../admin/routes.ts';
import type { AppDeps } from '../http/app.ts';
import { notFound, unauthorized } from '../http/errors.ts';

/**
 * GET /metrics in Prometheus text format on the API listener. Open unless
 * WEIR_METRICS_TOKEN is set (then Prometheus sends it as a bearer token:
 * `authorization: {credentials: ...}` in its scrape config); absent (404)
 * when WEIR_METRICS=0.
 */
export function metricsRoutes(app: FastifyInstance, deps: AppDeps): void {
  const { metrics, config } = deps;
  app.get('/metrics', async (request, reply) => {
    if (!metrics) throw notFound('Metrics are turned off on this node (WEIR_METRICS=0).');
    if (config.metricsToken && !adminTokenMatches(request.headers.authorization, config.metricsToken)) {
      throw unauthorized('A valid metrics token is required: send Authorization: Bearer <WEIR_METRICS_TOKEN>.');
    }
    const text = await metrics.text();
    return reply.header('content-type', metrics.contentType).header('cache-control', 'no-store').send(text);
  });
}

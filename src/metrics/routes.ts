import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../http/deps.ts';
import { errorBody } from '../http/errors.ts';
import { scrapeMetrics } from './scrape.ts';

/**
 * GET /metrics in Prometheus text format on the API listener. Open unless
 * WEIR_METRICS_TOKEN is set (then Prometheus sends it as a bearer token:
 * `authorization: {credentials: ...}` in its scrape config); absent (404)
 * when WEIR_METRICS=0, or when WEIR_METRICS_PORT moves it to a listener of
 * its own (src/metrics/listener.ts).
 */
export function metricsRoutes(app: FastifyInstance, deps: AppDeps): void {
  const { metrics, config } = deps;
  app.get('/metrics', async (request, reply) => {
    if (metrics && config.metricsPort !== undefined) {
      return reply.status(404).send(errorBody('not_found', 'Metrics are served on their own port (WEIR_METRICS_PORT), not on the API listener.'));
    }
    const answer = await scrapeMetrics(metrics, config, request.headers.authorization);
    if (answer.status !== 200) return reply.status(answer.status).send(answer.body);
    return reply.header('content-type', answer.contentType).header('cache-control', 'no-store').send(answer.text);
  });
}

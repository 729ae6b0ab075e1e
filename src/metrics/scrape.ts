import { adminTokenMatches } from '../auth/operator-token.ts';
import type { Config } from '../config.ts';
import { errorBody, type ErrorBody } from '../http/errors.ts';
import type { WeirMetrics } from './metrics.ts';

export type ScrapeAnswer = { status: 200; contentType: string; text: string } | { status: 401 | 404; body: ErrorBody };

/**
 * One scrape, wherever it arrives (the API listener's /metrics, or the
 * WEIR_METRICS_PORT listener): absent when metrics are off, refused without
 * WEIR_METRICS_TOKEN when one is set, else the registry's text.
 */
export async function scrapeMetrics(metrics: WeirMetrics | undefined, config: Pick<Config, 'metricsToken'>, authorization: string | undefined): Promise<ScrapeAnswer> {
  if (!metrics) return { status: 404, body: errorBody('not_found', 'Metrics are turned off on this node (WEIR_METRICS=0).') };
  if (config.metricsToken && !adminTokenMatches(authorization, config.metricsToken)) {
    return { status: 401, body: errorBody('unauthorized', 'A valid metrics token is required: send Authorization: Bearer <WEIR_METRICS_TOKEN>.') };
  }
  return { status: 200, contentType: metrics.contentType, text: await metrics.text() };
}

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import { errorBody } from '../http/errors.ts';
import type { WeirMetrics } from './metrics.ts';
import { scrapeMetrics } from './scrape.ts';

export interface MetricsListener {
  port: number;
  close(): Promise<void>;
}

/**
 * WEIR_METRICS_PORT: /metrics on a listener of its own (same WEIR_HOST), so
 * a firewall or a Kubernetes Service can expose the API and keep the
 * scrape port internal. Plain node:http: one route, nothing to route or
 * parse, no body. Every other path answers 404 in the error envelope.
 */
export async function startMetricsListener(deps: { metrics: WeirMetrics; config: Config; logger: Logger }, port: number): Promise<MetricsListener> {
  const { metrics, config, logger } = deps;
  const send = (res: ServerResponse, status: number, type: string, text: string) => {
    res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' });
    res.end(text);
  };
  const json = 'application/json; charset=utf-8';
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics') return send(res, 404, json, JSON.stringify(errorBody('not_found', `No route ${req.method} ${path}; metrics are at /metrics.`)));
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, json, JSON.stringify(errorBody('method_not_allowed', 'Use GET /metrics.')));
    const answer = await scrapeMetrics(metrics, config, req.headers.authorization);
    if (answer.status === 200) send(res, 200, answer.contentType, answer.text);
    else send(res, answer.status, json, JSON.stringify(answer.body));
  };
  const server = createServer((req, res) => {
    req.resume();
    handle(req, res).catch((err) => {
      logger.error({ err }, 'metrics scrape failed');
      if (!res.headersSent) send(res, 500, json, JSON.stringify(errorBody('internal_error', 'The metrics could not be collected; see the node log.')));
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as { port: number }).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}

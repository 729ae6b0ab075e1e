import type { IncomingHttpHeaders } from 'node:http';
import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import { PAGE_PREFIXES } from '../dashboard/routes.ts';

const DASHBOARD_FILE = new RegExp(`^/(?:$|favicon\\.ico|dashboard/|(?:${PAGE_PREFIXES.join('|')})(?:[/?]|$))`);

/**
 * The dashboard's own traffic: its files and pages, and the reads it makes
 * while a page is open (every GET it sends carries `x-weir-client:
 * dashboard`). An open tab would otherwise write two info lines a poll.
 */
export function isDashboardChatter(req: { method?: string; url?: string; headers: IncomingHttpHeaders }): boolean {
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  return req.headers['x-weir-client'] === 'dashboard' || DASHBOARD_FILE.test(req.url ?? '');
}

/**
 * Fastify's request lines ("incoming request", "request completed") at debug
 * for the dashboard's chatter, at info for everything else: info keeps what
 * an operator needs (every change, every other API client, every error).
 */
export class WeirLogController extends LogController {
  override incomingRequest(request: FastifyRequest, reply: FastifyReply): void {
    if (isDashboardChatter(request)) request.log.debug({ req: request }, 'incoming request');
    else super.incomingRequest(request, reply);
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (!error && isDashboardChatter(request)) reply.log.debug({ res: reply, responseTime: reply.elapsedTime }, 'request completed');
    else super.requestCompleted(error, request, reply);
  }
}

import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { urlHost, type Config } from '../config.ts';
import type { Db } from '../db/db.ts';
import type { PreparedIngestResponse } from '../endpoints/ingest-response.ts';
import type { IngestMetrics, RefusalReason } from '../metrics/metrics.ts';
import { newId } from '../db/ids.ts';
import { idTime } from '../requests/capture-ids.ts';
import type { Handoff } from '../delivery/handoff.ts';
import { CaptureBatcher } from './batcher.ts';
import { EndpointCache } from './endpoint-cache.ts';
import { headerPairs, headerValue, headerValues, parseTarget, readBody } from './request-parts.ts';
import { sourceAddress, trustedProxies } from './source-ip.ts';
import { verifyRequest, type VerificationResult } from '../verification/verify.ts';
import { dedupKeyHash } from '../routing/dedup.ts';

export interface IngestDeps {
  db: Db;
  config: Config;
  logger: Logger;
  /** Absent when metrics are off (WEIR_METRICS=0). */
  metrics?: IngestMetrics;
}

/** Knobs tests turn; production uses the defaults. */
export interface IngestOptions {
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
  /** Capture groups committing at once (default: 1 on PGlite, 2 on PostgreSQL, the second only beside a large group). */
  maxInFlight?: number;
}

export interface IngestListener {
  server: http.Server;
  port: number;
  /** Lets the capture statement hand fresh deliveries to this node's HTTPS worker (src/delivery/handoff.ts); undefined stops it. */
  handTo(handoff: Handoff | undefined): void;
  close(): Promise<void>;
}

// Slow clients: the headers must arrive within 10 s and the whole request
// (a 10 MiB body on a slow link included) within 60 s; Node checks every
// second instead of its default 30 s, so an idle connection is not held long.
const HEADERS_TIMEOUT_MS = 10_000;
const REQUEST_TIMEOUT_MS = 60_000;
const KEEP_ALIVE_TIMEOUT_MS = 5_000;
// Bodies being received or waiting for their commit, all requests together:
// past this, new requests get 503 instead of growing the heap without bound.
const MAX_BUFFERED_BYTES = 512 * 1024 * 1024;
const PAUSED = 'endpoint paused';
// The sender-facing answer to a capture that enforce refused (issue 25's contract).
const UNVERIFIED = { error: 'signature verification failed' };

/**
 * The public ingestion listener: plain node:http, because it is the hot path
 * and Fastify's routing, hooks and serialisation buy nothing for one route.
 *
 * /h/{slug}[/anything][?query] with any method and no key is captured; every
 * other target is 404. Answers are JSON: 200 {request_id} only once the
 * capture is committed (or the endpoint's custom `response`, written at the
 * same moment); otherwise {error: "<text>"} (a string, as the
 * specification fixes for 423) with 404, 413, 423 or 503.
 */
export async function startIngest(deps: IngestDeps, port: number, opts: IngestOptions = {}): Promise<IngestListener> {
  const { db, config, logger, metrics } = deps;
  // WEIR_INGEST_URL, else this listener's own address once bound (as src/server.ts writes into links)
  let ingestBase = config.ingestUrl ?? '';
  const cache = new EndpointCache(db, () => ingestBase);
  await cache.start();
  const batcher = new CaptureBatcher(
    db,
    // PGlite has one connection. On PostgreSQL a second group may commit
    // beside a large one (see heavyBatchBytes in batcher.ts); more groups at
    // once would only split the same load into smaller groups, each paying
    // its own round trip and flush.
    {
      batchMs: config.captureBatchMs,
      turns: db.kind === 'pglite' ? 2 : 1,
      maxInFlight: opts.maxInFlight ?? (db.kind === 'pglite' ? 1 : Math.min(2, Math.max(1, config.dbPoolSize - 1))),
    },
    logger,
    metrics,
  );
  const proxies = trustedProxies(config.trustedProxies);
  let buffered = 0;

  async function handle(req: IncomingMessage, res: ServerResponse, expectsContinue: boolean): Promise<void> {
    req.on('error', () => {});
    res.on('error', () => {});
    // one clock read per request, only when metrics are on
    const startedAt = metrics ? performance.now() : 0;
    const target = parseTarget(req.url);
    if (!target) return refuse(req, res, 'not_found', 404, { error: 'not found: ingestion URLs are /h/{slug}' });
    const declared = req.headers['content-length'] === undefined ? 0 : Number(req.headers['content-length']);
    if (declared > config.maxBodyBytes) return refuse(req, res, 'too_large', 413, { error: `body larger than ${config.maxBodyBytes} bytes` });
    if (buffered + declared > MAX_BUFFERED_BYTES) return refuse(req, res, 'overloaded', 503, { error: 'too many requests in progress, retry shortly' }, { 'retry-after': '1' });
    let endpoint = await cache.lookup(target.slug);
    // A cached "paused" is confirmed before refusing, so an unpause counts at
    // once; a stale "active" is caught by the capture transaction itself.
    if (endpoint?.paused) endpoint = await cache.lookup(target.slug, { fresh: true });
    if (!endpoint) return refuse(req, res, 'not_found', 404, { error: 'endpoint not found' });
    if (endpoint.paused) return refuse(req, res, 'paused', 423, { error: PAUSED });

    if (expectsContinue) res.writeContinue();
    buffered += declared;
    let held = declared;
    try {
      const body = await readBody(req, config.maxBodyBytes);
      if (!body.ok) {
        if (body.reason === 'too_large') refuse(req, res, 'too_large', 413, { error: `body larger than ${config.maxBodyBytes} bytes` });
        else metrics?.refused('malformed');
        return;
      }
      buffered += body.body.length - held;
      held = body.body.length;
      // The id's millisecond is received_at, so the id names its partition.
      const id = newId(Date.now());
      const raw = req.rawHeaders;
      // Verified on the exact bytes that are stored, before the capture
      // statement, which writes the result with the capture. An endpoint
      // without verification pays this one property check.
      const verifier = endpoint.verification;
      let verification: VerificationResult | undefined;
      if (verifier) {
        verification = verifyRequest(verifier, { rawHeaders: raw, body: body.body, slug: target.slug, path: target.path, query: target.query });
        metrics?.verified(verifier.provider, verification.status);
      }
      const rejected = verification?.status === 'failed' && verifier!.enforce;
      // Deduplication's key (src/routing/dedup.ts); the capture statement decides. Without it, one property check.
      const dedup = endpoint.deduplication;
      const dedupKey = dedup ? dedupKeyHash(dedup, raw, body.body) : null;
      const outcome = await batcher.submit({
        id,
        organization_id: endpoint.organization_id,
        endpoint_id: endpoint.id,
        received_at: new Date(idTime(id)),
        method: req.method ?? 'GET',
        path: target.path,
        query: target.query,
        headers: headerPairs(raw),
        body: body.body,
        body_size: body.body.length,
        content_type: headerValue(raw, 'content-type') ?? null,
        source_ip: sourceAddress(req.socket.remoteAddress, proxies ? headerValues(raw, 'x-forwarded-for') : [], proxies),
        verification_status: verification?.status ?? null,
        verification_reason: verification?.reason ?? null,
        rejected,
        ...(dedupKey && { dedup_key: dedupKey, dedup_window_seconds: dedup!.window_seconds }),
      });
      if (outcome === 'stored') {
        // Stored (so the user sees what was refused) but neither forwarded nor announced: the statement skips both.
        if (rejected) return refuse(req, res, 'unverified', 401, UNVERIFIED);
        // The endpoint's custom answer (prepared when cached), else the default.
        if (endpoint.response) answerCustom(res, endpoint.response);
        else reply(req, res, 200, { request_id: id });
        return metrics?.acknowledged((performance.now() - startedAt) / 1000);
      }
      if (outcome === 'endpoint_gone') return refuse(req, res, 'not_found', 404, { error: 'endpoint not found' });
      if (outcome === 'endpoint_paused') return refuse(req, res, 'paused', 423, { error: PAUSED });
      return refuse(req, res, 'overloaded', 503, { error: 'capture temporarily unavailable, retry shortly' }, { 'retry-after': '1' });
    } finally {
      buffered -= held;
    }
  }

  function refuse(req: IncomingMessage, res: ServerResponse, reason: RefusalReason, status: number, body: object, extra?: Record<string, string>): void {
    metrics?.refused(reason);
    reply(req, res, status, body, extra);
  }

  const onRequest = (expectsContinue: boolean) => (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res, expectsContinue).catch((err) => {
      logger.error({ err }, 'ingest request failed');
      if (!res.headersSent) refuse(req, res, 'overloaded', 503, { error: 'capture temporarily unavailable, retry shortly' }, { 'retry-after': '1' });
      else res.destroy();
    });
  };

  const server = http.createServer(
    {
      headersTimeout: opts.headersTimeoutMs ?? HEADERS_TIMEOUT_MS,
      requestTimeout: opts.requestTimeoutMs ?? REQUEST_TIMEOUT_MS,
      keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
      connectionsCheckingInterval: Math.min(1_000, opts.headersTimeoutMs ?? 1_000),
    },
    onRequest(false),
  );
  // Expect: 100-continue is answered only once the slug, pause state and
  // declared size are known to be fine, so a refused sender never uploads.
  server.on('checkContinue', onRequest(true));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, config.host, () => resolve());
  });
  const bound = (server.address() as { port: number }).port;
  ingestBase ||= `http://${urlHost(config.host)}:${bound}`;

  let closing: Promise<void> | undefined;
  return {
    server,
    port: bound,
    handTo(handoff) {
      batcher.handoff = handoff;
    },
    close() {
      closing ??= (async () => {
        // Stop accepting, let requests in progress finish (their captures
        // commit and are acknowledged), then drop the stragglers.
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        const force = setTimeout(() => server.closeAllConnections(), 5_000);
        await stopped;
        clearTimeout(force);
        await batcher.close();
        await cache.stop();
      })();
      return closing;
    },
  };
}

/** An endpoint's custom answer to a committed capture; its headers and content-length were prepared from the setting. */
function answerCustom(res: ServerResponse, r: PreparedIngestResponse): void {
  if (res.headersSent) return;
  res.writeHead(r.status, r.headers);
  res.end(r.body);
}

/**
 * Writes a small JSON answer. When the request body was not read (refused
 * early or too large) the connection is closed after the answer instead of
 * draining an upload we do not want; the short delay lets the client read
 * the answer before the socket goes.
 */
function reply(req: IncomingMessage, res: ServerResponse, status: number, body: object, extra: Record<string, string> = {}): void {
  if (res.headersSent) return;
  const payload = JSON.stringify(body);
  const unread = !req.complete && (req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(payload),
    'cache-control': 'no-store',
    ...(unread ? { connection: 'close' } : {}),
    ...extra,
  });
  res.end(payload);
  if (unread) res.once('finish', () => setTimeout(() => req.socket?.destroy(), 250).unref());
}

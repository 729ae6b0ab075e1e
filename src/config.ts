import { accessSync, constants, statSync } from 'node:fs';
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { bootstrapPlan, DEFAULT_PLANS, loadPlans, type PlanName, type PlanTable } from './orgs/plans.ts';

/** Every setting Weir reads, typed and validated in one place (see README "Configuration"). */
export interface Config {
  databaseUrl: string | undefined;
  dataDir: string;
  host: string;
  apiPort: number;
  ingestPort: number;
  /** Explicit WEIR_PUBLIC_URL; when undefined it is derived from host and the bound API port. */
  publicUrl: string | undefined;
  ingestUrl: string | undefined;
  region: string;
  adminToken: string | undefined;
  allowPrivateDestinations: boolean;
  asnDb: string | undefined;
  plans: PlanTable;
  /** Plan of the organization the first start creates (orgs/plans.ts bootstrapPlan). */
  bootstrapPlan: PlanName;
  maxBodyBytes: number;
  /** A transformation run's CPU limit (WEIR_TRANSFORM_CPU_MS, docs/transformations.md). */
  transformCpuMs: number;
  /** A transformation code version's heap limit (WEIR_TRANSFORM_MEMORY_MB). */
  transformMemoryBytes: number;
  trustedProxies: string[];
  logLevel: string;
  dbPoolSize: number;
  captureBatchMs: number;
  /** PGlite flushes each commit to disk (WEIR_PGLITE_FSYNC; src/db/pglite-fsync.ts). */
  pgliteFsync: boolean;
  /** Weir's own analyze and vacuum (WEIR_DB_MAINTENANCE; src/db/table-maintenance.ts). */
  dbMaintenance: 'auto' | 'all' | 'off';
  /** Forwarding engine settings (docs/forwarding.md). */
  forwardTimeoutMs: number;
  forwardConnectTimeoutMs: number;
  deliveryConcurrency: number;
  /** Bytes of captured bodies in held deliveries past which a node claims nothing ahead of its free send slots (WEIR_DELIVERY_HOLD_MB). */
  deliveryHoldBytes: number;
  deliveryLeaseMs: number;
  deliveryPollMs: number;
  /** Where HTTPS forwards are sent from (WEIR_FORWARD_THREAD; src/delivery/thread-transport.ts): auto is a thread of their own on PGlite. */
  forwardThread: 'auto' | 'on' | 'off';
  /** Whether the capture statement leases a fresh forward to this node's idle worker (WEIR_FORWARD_HANDOFF, on unless 0; src/delivery/handoff.ts). */
  forwardHandoff: boolean;
  /** Prometheus metrics at /metrics (WEIR_METRICS, on unless 0; docs/operations.md). */
  metrics: boolean;
  /** Bearer token /metrics requires when set (WEIR_METRICS_TOKEN). */
  metricsToken: string | undefined;
  /** WEIR_METRICS_PORT: /metrics on a listener of its own instead of the API listener; undefined = on the API listener. */
  metricsPort: number | undefined;
  /** Heartbeat comment interval of live-tail streams (WEIR_SSE_HEARTBEAT_MS; docs/capture.md). */
  sseHeartbeatMs: number;
}

export class ConfigError extends Error {
  constructor(readonly variable: string, problem: string) {
    super(`${variable} ${problem}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function str(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v === '' ? undefined : v;
}

function port(env: Env, name: string, dflt: number): number {
  const v = str(env, name);
  if (v === undefined) return dflt;
  if (!/^\d+$/.test(v) || Number(v) > 65535) throw new ConfigError(name, `must be a port number 0-65535, got "${v}"`);
  return Number(v);
}

/** A switch set as 1 or 0; unset or empty: `dflt`. */
function flag(env: Env, name: string, dflt: boolean): boolean {
  const v = str(env, name);
  if (v === undefined) return dflt;
  if (v !== '0' && v !== '1') throw new ConfigError(name, `must be 1 or 0, got "${v}"`);
  return v === '1';
}

function boundedInt(env: Env, name: string, dflt: number, max = Number.MAX_SAFE_INTEGER, min = 1): number {
  const v = str(env, name);
  if (v === undefined) return dflt;
  if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) throw new ConfigError(name, `must be an integer ${min}-${max}, got "${v}"`);
  return Number(v);
}

function url(env: Env, name: string): string | undefined {
  const v = str(env, name);
  if (v === undefined) return undefined;
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw new ConfigError(name, `must be an absolute http(s) URL, got "${v}"`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new ConfigError(name, `must be an http(s) URL, got "${v}"`);
  if (u.search || u.hash) throw new ConfigError(name, `must be a base URL without a query or fragment, got "${v}"`);
  return v.replace(/\/+$/, '');
}

/** A path that must name a readable file (checked now, so a typo stops start-up instead of surfacing later). */
function readableFile(env: Env, name: string): string | undefined {
  const v = str(env, name);
  if (v === undefined) return undefined;
  try {
    if (!statSync(v).isFile()) throw new Error('not a file');
    accessSync(v, constants.R_OK);
  } catch {
    throw new ConfigError(name, `must name a readable file, got "${v}"`);
  }
  return v;
}

// One DNS label: letters, digits and inner hyphens, 1-63 characters.
const HOSTNAME_RE = /^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/** The forwarding engine's settings; a lease must outlast one whole attempt plus a paced wait, or a slow forward would be sent twice. */
function deliverySettings(env: Env) {
  const forwardTimeoutMs = boundedInt(env, 'WEIR_FORWARD_TIMEOUT_MS', 30_000, 600_000);
  const forwardConnectTimeoutMs = boundedInt(env, 'WEIR_FORWARD_CONNECT_TIMEOUT_MS', Math.min(10_000, forwardTimeoutMs), 600_000);
  const deliveryLeaseMs = boundedInt(env, 'WEIR_DELIVERY_LEASE_MS', forwardTimeoutMs + 30_000, 3_600_000);
  if (deliveryLeaseMs < forwardTimeoutMs + 2_000) {
    throw new ConfigError('WEIR_DELIVERY_LEASE_MS', `must be at least WEIR_FORWARD_TIMEOUT_MS + 2000 (${forwardTimeoutMs + 2_000}), got "${deliveryLeaseMs}"`);
  }
  const forwardThread = str(env, 'WEIR_FORWARD_THREAD') ?? 'auto';
  if (forwardThread !== 'auto' && forwardThread !== 'on' && forwardThread !== 'off') {
    throw new ConfigError('WEIR_FORWARD_THREAD', `must be auto, on or off, got "${forwardThread}"`);
  }
  return {
    forwardTimeoutMs,
    forwardConnectTimeoutMs,
    forwardThread: forwardThread as Config['forwardThread'],
    forwardHandoff: flag(env, 'WEIR_FORWARD_HANDOFF', true),
    deliveryConcurrency: boundedInt(env, 'WEIR_DELIVERY_CONCURRENCY', 32, 1024),
    deliveryHoldBytes: boundedInt(env, 'WEIR_DELIVERY_HOLD_MB', 64, 65_536, 0) * 1024 * 1024,
    deliveryLeaseMs,
    deliveryPollMs: boundedInt(env, 'WEIR_DELIVERY_POLL_MS', 5_000, 600_000),
  };
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export function loadConfig(env: Env = process.env): Config {
  const databaseUrl = str(env, 'DATABASE_URL');
  if (databaseUrl !== undefined && (!/^postgres(ql)?:\/\//.test(databaseUrl) || !URL.canParse(databaseUrl))) {
    // The value may hold a password: never echo it.
    throw new ConfigError('DATABASE_URL', 'must be a postgres:// or postgresql:// connection string');
  }
  const region = str(env, 'WEIR_REGION') ?? 'us';
  if (!/^[a-z0-9]{2,16}$/.test(region)) throw new ConfigError('WEIR_REGION', `must be 2-16 lowercase letters or digits, got "${region}"`);
  const host = str(env, 'WEIR_HOST') ?? '127.0.0.1';
  if (isIP(host) === 0 && !HOSTNAME_RE.test(host)) throw new ConfigError('WEIR_HOST', `must be an IP address or a host name, got "${host}"`);
  const allowPrivateDestinations = flag(env, 'WEIR_ALLOW_PRIVATE_DESTINATIONS', false);
  const plansValue = str(env, 'WEIR_PLANS');
  let plans = DEFAULT_PLANS;
  if (plansValue !== undefined) {
    try {
      plans = loadPlans(plansValue);
    } catch (err) {
      throw new ConfigError('WEIR_PLANS', (err as Error).message);
    }
  }
  const adminToken = str(env, 'WEIR_ADMIN_TOKEN');
  if (adminToken !== undefined && adminToken.length < 16) throw new ConfigError('WEIR_ADMIN_TOKEN', 'must be at least 16 characters');
  const trustedProxies = (str(env, 'WEIR_TRUSTED_PROXIES') ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  for (const p of trustedProxies) {
    const [addr, bits] = p.split('/');
    const family = isIP(addr ?? '');
    if (family === 0 || (bits !== undefined && (!/^\d+$/.test(bits) || Number(bits) > (family === 4 ? 32 : 128)))) {
      throw new ConfigError('WEIR_TRUSTED_PROXIES', `must be a comma-separated list of IP addresses or CIDR ranges, got "${p}"`);
    }
  }
  const pgliteFsync = flag(env, 'WEIR_PGLITE_FSYNC', false);
  const dbMaintenance = str(env, 'WEIR_DB_MAINTENANCE') ?? 'auto';
  if (dbMaintenance !== 'auto' && dbMaintenance !== 'all' && dbMaintenance !== 'off') {
    throw new ConfigError('WEIR_DB_MAINTENANCE', `must be auto, all or off, got "${dbMaintenance}"`);
  }
  const metrics = flag(env, 'WEIR_METRICS', true);
  const metricsToken = str(env, 'WEIR_METRICS_TOKEN');
  if (metricsToken !== undefined && metricsToken.length < 16) throw new ConfigError('WEIR_METRICS_TOKEN', 'must be at least 16 characters');
  const logLevel = str(env, 'WEIR_LOG_LEVEL') ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError('WEIR_LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  const dataDir = resolve(str(env, 'WEIR_DATA_DIR') ?? './data');
  if (databaseUrl === undefined && isFile(dataDir)) throw new ConfigError('WEIR_DATA_DIR', `must be a directory, got the file "${dataDir}"`);
  const apiPort = port(env, 'WEIR_API_PORT', 8080);
  const ingestPort = port(env, 'WEIR_INGEST_PORT', 8081);
  if (apiPort !== 0 && apiPort === ingestPort) throw new ConfigError('WEIR_INGEST_PORT', `must differ from WEIR_API_PORT (both are ${apiPort})`);
  const metricsPort = str(env, 'WEIR_METRICS_PORT') === undefined ? undefined : port(env, 'WEIR_METRICS_PORT', 0);
  if (metricsPort !== undefined && !metrics) throw new ConfigError('WEIR_METRICS_PORT', 'is set, but WEIR_METRICS=0 turns metrics off: unset one of them');
  if (metricsPort) {
    const clash = metricsPort === apiPort ? 'WEIR_API_PORT' : metricsPort === ingestPort ? 'WEIR_INGEST_PORT' : undefined;
    if (clash) throw new ConfigError('WEIR_METRICS_PORT', `must differ from ${clash} (both are ${metricsPort})`);
  }
  // Node reads NODE_EXTRA_CA_CERTS itself and only warns when the file is missing; forwards would then fail TLS far from the cause.
  readableFile(env, 'NODE_EXTRA_CA_CERTS');
  return {
    databaseUrl,
    dataDir,
    host,
    apiPort,
    ingestPort,
    publicUrl: url(env, 'WEIR_PUBLIC_URL'),
    ingestUrl: url(env, 'WEIR_INGEST_URL'),
    region,
    adminToken,
    allowPrivateDestinations,
    asnDb: readableFile(env, 'WEIR_ASN_DB'),
    plans,
    bootstrapPlan: bootstrapPlan(plansValue !== undefined),
    maxBodyBytes: boundedInt(env, 'WEIR_MAX_BODY_BYTES', 10 * 1024 * 1024, 1024 * 1024 * 1024),
    transformCpuMs: boundedInt(env, 'WEIR_TRANSFORM_CPU_MS', 50, 10_000, 1),
    transformMemoryBytes: boundedInt(env, 'WEIR_TRANSFORM_MEMORY_MB', 16, 1024, 2) * 1024 * 1024,
    trustedProxies,
    logLevel,
    dbPoolSize: boundedInt(env, 'WEIR_DB_POOL_SIZE', 10, 1000),
    captureBatchMs: boundedInt(env, 'WEIR_CAPTURE_BATCH_MS', 0, 1000, 0),
    pgliteFsync,
    dbMaintenance,
    ...deliverySettings(env),
    metrics,
    metricsToken,
    metricsPort,
    sseHeartbeatMs: boundedInt(env, 'WEIR_SSE_HEARTBEAT_MS', 15_000, 300_000, 100),
  };
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** Host as it goes into a URL: IPv6 literals need brackets; 0.0.0.0 and :: are not reachable addresses. */
export function urlHost(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return isIP(host) === 6 ? `[${host}]` : host;
}

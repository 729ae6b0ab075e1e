/**
 * What happens after an attempt: done, try again later, or give up. Pure
 * functions of the attempt's outcome and the destination's settings, so the
 * whole policy is testable without a network.
 */

export interface RetrySettings {
  retryEnabled: boolean;
  /** Delays in seconds before attempt 2, 3, ...; its length is the number of retries. */
  schedule: readonly number[];
  /** Retry only what can succeed later, honouring Retry-After (see decide()). */
  intelligent: boolean;
  /** Why retries are off, for the delivery's last_error (default: the destination's setting). */
  noRetryReason?: string;
}

/** Svix's schedule (the forward_destinations column default): 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. */
export const DEFAULT_RETRY_SCHEDULE: readonly number[] = [5, 300, 1800, 7200, 18000, 36000, 36000];

/** The settings of an endpoint's forward_url, which has no row to hold any. */
export const DEFAULT_RETRY: RetrySettings = { retryEnabled: true, schedule: DEFAULT_RETRY_SCHEDULE, intelligent: true };

/** Development agents never retry: a failure is final, recorded as failed. */
export const NO_RETRY: RetrySettings = { retryEnabled: false, schedule: [], intelligent: true, noRetryReason: 'development agents never retry' };

/**
 * Agent destinations retry by environment, whatever their retry columns say
 * (the specification): production agents retry retryable failures on the
 * default schedule, development agents never.
 */
export function agentRetry(environment: 'production' | 'development' | null): RetrySettings {
  return environment === 'production' ? DEFAULT_RETRY : NO_RETRY;
}

/**
 * An HTTPS destination's retry settings as its row holds them: the
 * endpoint's forward_url (no row, forwardDestinationId null) and a row
 * read without them get DEFAULT_RETRY. One rule for the claim (claim.ts)
 * and the hand-off (handoff.ts).
 */
export function destinationRetry(
  forwardDestinationId: string | null,
  retryEnabled: boolean | null,
  schedule: readonly number[] | null,
  intelligent: boolean | null,
): RetrySettings {
  return forwardDestinationId === null || retryEnabled === null ? DEFAULT_RETRY : { retryEnabled, schedule: schedule ?? [], intelligent: intelligent ?? true };
}

/** A Retry-After longer than this is clamped: one slow destination must not park a delivery for days. */
export const RETRY_AFTER_CAP_SECONDS = 3600;

/**
 * Why an attempt failed. `http_status` and `redirect` carry a status code;
 * the rest happened before (or instead of) an HTTP answer.
 */
export type ErrorClass =
  | 'http_status'
  | 'redirect'
  | 'connection_refused'
  | 'connect_timeout'
  | 'timeout'
  | 'tls_error'
  | 'dns_error'
  | 'network_error'
  | 'ssrf_refused'
  | 'invalid_url'
  | 'invalid_request'
  | 'capture_missing'
  | 'destination_disabled'
  // src/transformations: the destination's code failed; never retried with the same code
  | 'transformation_timeout'
  | 'transformation_memory'
  | 'transformation_error';

/** Failures no retry can fix: the target itself is refused or gone. Never retried, whatever the settings. */
const PERMANENT: ReadonlySet<ErrorClass> = new Set(['ssrf_refused', 'invalid_url', 'invalid_request', 'capture_missing', 'destination_disabled',
  'transformation_timeout', 'transformation_memory', 'transformation_error']);

/** Network-level failures that intelligent retry retries (the destination may come back). */
const TRANSIENT: ReadonlySet<ErrorClass> = new Set(['connection_refused', 'connect_timeout', 'timeout', 'tls_error', 'dns_error', 'network_error']);

/** HTTP statuses that intelligent retry retries besides 5xx. */
const RETRYABLE_STATUS = new Set([408, 425, 429]);

export interface AttemptOutcome {
  /** The HTTP status when an answer arrived. */
  statusCode?: number;
  /** Set when the attempt did not succeed. */
  errorClass?: ErrorClass;
  /** Seconds from the Retry-After header of the answer, when it had a valid one. */
  retryAfterSeconds?: number;
}

export type Decision =
  | { status: 'succeeded' }
  | { status: 'pending'; delaySeconds: number }
  | { status: 'failed'; reason: string }
  | { status: 'dead'; reason: string };

export function isSuccess(statusCode: number | undefined): boolean {
  return statusCode !== undefined && statusCode >= 200 && statusCode < 300;
}

/** Whether intelligent retry would try this outcome again. */
export function isRetryable(o: AttemptOutcome): boolean {
  if (o.errorClass && PERMANENT.has(o.errorClass)) return false;
  if (o.statusCode !== undefined) return o.statusCode >= 500 || RETRYABLE_STATUS.has(o.statusCode);
  return o.errorClass !== undefined && TRANSIENT.has(o.errorClass);
}

/**
 * The decision after attempt number `attempt` (1 = the first try).
 * - 2xx: succeeded.
 * - Retries off: failed.
 * - Intelligent: network errors, timeouts, 408, 425, 429 and 5xx are retried
 *   after the schedule's next delay, or after Retry-After when the answer
 *   carried one (clamped to RETRY_AFTER_CAP_SECONDS); other 4xx and 3xx fail.
 * - Not intelligent: every failure is retried on the schedule, Retry-After ignored.
 * - Permanent failures (refused address, invalid URL, capture gone) always fail.
 * When the schedule has no delay left, a retryable failure is dead.
 */
export function decide(o: AttemptOutcome, settings: RetrySettings, attempt: number): Decision {
  if (!o.errorClass && isSuccess(o.statusCode)) return { status: 'succeeded' };
  const what = o.statusCode !== undefined ? `HTTP ${o.statusCode}` : (o.errorClass ?? 'error');
  if (o.errorClass && PERMANENT.has(o.errorClass)) return { status: 'failed', reason: `${what} cannot succeed on retry` };
  if (!settings.retryEnabled) return { status: 'failed', reason: `${what}; ${settings.noRetryReason ?? 'retries are disabled for this destination'}` };
  if (settings.intelligent && !isRetryable(o)) return { status: 'failed', reason: `${what} is not retried` };
  const next = settings.schedule[attempt - 1];
  if (next === undefined) return { status: 'dead', reason: `${what} after ${attempt} attempt${attempt === 1 ? '' : 's'}; the retry schedule is exhausted` };
  if (settings.intelligent && o.retryAfterSeconds !== undefined) {
    return { status: 'pending', delaySeconds: Math.min(Math.max(o.retryAfterSeconds, 1), RETRY_AFTER_CAP_SECONDS) };
  }
  return { status: 'pending', delaySeconds: Math.max(0, next) };
}

/** Parses Retry-After (delay-seconds or an HTTP date) into seconds from `now`; undefined when absent or malformed. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v);
  const at = Date.parse(v);
  if (Number.isNaN(at) || !/[a-z]/i.test(v)) return undefined;
  return Math.max(0, Math.ceil((at - now) / 1000));
}

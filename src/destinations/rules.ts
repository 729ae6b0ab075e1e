import { roleHas, type Role } from '../auth/permissions.ts';
import { httpsTargetUrlProblem } from '../delivery/target-url.ts';
import { validateFilter } from '../routing/filter.ts';

/**
 * Field rules of saved and forward destinations, shared by creation and the
 * PATCH routes. Each check answers a readable problem or undefined; the
 * callers turn a problem into a 400 bad_request before anything is written.
 */
export const NAME_MAX = 100;
export const TARGET_PATH_MAX = 2048;
/** Enough for a week of spaced retries; a longer schedule is almost always a mistake. */
export const RETRY_SCHEDULE_MAX_ENTRIES = 20;
/** One day: a destination still failing after that is an incident, not a retry. */
export const RETRY_DELAY_MAX_SECONDS = 86_400;
/** The database's check on rate_limit_per_minute (1000 per second). */
export const RATE_LIMIT_MAX_PER_MINUTE = 60_000;
export const SORT_ORDER_MAX = 1_000_000;

export const VISIBILITIES = ['private', 'org', 'restricted'] as const;
export type Visibility = (typeof VISIBILITIES)[number];

// RFC 9110 token characters. CONNECT and TRACE (and TRACK, TRACE's IIS twin)
// are not forwarding methods: they change what the connection is, and Node's
// HTTP client refuses them.
const METHOD_TOKEN_RE = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,32}$/;
const REFUSED_METHODS = new Set(['CONNECT', 'TRACE', 'TRACK']);

// No spaces, control characters or fragment: the path goes on the request line as is.
const TARGET_PATH_RE = /^\/[\x21-\x7e]*$/;

/**
 * The specification's agent rule: creating, changing or removing an agent
 * destination needs agents.assign_destination on top of endpoints.edit.
 * Every route that touches one asks here.
 */
export function agentAssignProblem(role: Role): string | undefined {
  return roleHas(role, 'agents.assign_destination')
    ? undefined
    : `The key's creator (role ${role}) lacks the permission agents.assign_destination needed for agent destinations.`;
}

export function nameProblem(name: string): string | undefined {
  const trimmed = name.trim();
  if (trimmed.length === 0 || trimmed.length > NAME_MAX) return `Field "name" must be 1-${NAME_MAX} characters (not only spaces).`;
  return undefined;
}

export function httpsUrlProblem(url: string): string | undefined {
  return httpsTargetUrlProblem(url, 'url');
}

export function methodProblem(method: string | null): string | undefined {
  if (method === null) return undefined;
  if (!METHOD_TOKEN_RE.test(method)) return 'Field "method_override" must be an HTTP method name such as POST or PUT, or null.';
  if (REFUSED_METHODS.has(method.toUpperCase())) return `Field "method_override" cannot be ${method}: it is not a forwarding method.`;
  return undefined;
}

export function targetPortProblem(port: number): string | undefined {
  if (!Number.isInteger(port) || port < 1 || port > 65535) return 'Field "target_port" must be an integer 1-65535.';
  return undefined;
}

export function targetPathProblem(path: string): string | undefined {
  if (!path.startsWith('/')) return 'Field "target_path" must start with /.';
  if (path.length > TARGET_PATH_MAX) return `Field "target_path" must be at most ${TARGET_PATH_MAX} characters long.`;
  if (!TARGET_PATH_RE.test(path) || path.includes('#')) return 'Field "target_path" must not contain spaces, control characters or a #fragment.';
  return undefined;
}

export function environmentOverrideProblem(value: string | null): string | undefined {
  if (value === null || value === 'development') return undefined;
  return 'Field "environment_override" may only be "development" (an override can downgrade an agent, never upgrade it), or null to inherit.';
}

export function sortOrderProblem(value: number): string | undefined {
  if (!Number.isInteger(value) || value < 0 || value > SORT_ORDER_MAX) return `Field "sort_order" must be an integer 0-${SORT_ORDER_MAX}.`;
  return undefined;
}

/** The settings a forward destination carries besides its target (CONTRACT.md "Forward destination settings"). */
export interface ForwardSettings {
  method_override?: string | null;
  retry_enabled?: boolean;
  retry_schedule?: number[];
  intelligent_retry?: boolean;
  rate_limit_enabled?: boolean;
  rate_limit_per_minute?: number | null;
  /** Routing filter (src/routing/filter.ts, docs/routing.md); null forwards everything. */
  filter?: unknown;
  /** JavaScript run before each send (src/transformations); checked to compile by the routes. */
  transformation?: { code: string } | null;
}

export const RETRY_FIELDS = ['retry_enabled', 'retry_schedule', 'intelligent_retry'] as const;
export const SETTINGS_FIELDS = ['method_override', ...RETRY_FIELDS, 'rate_limit_enabled', 'rate_limit_per_minute', 'filter', 'transformation'] as const;

export function retryScheduleProblem(schedule: number[]): string | undefined {
  if (schedule.length === 0 || schedule.length > RETRY_SCHEDULE_MAX_ENTRIES) {
    return `Field "retry_schedule" must list 1-${RETRY_SCHEDULE_MAX_ENTRIES} delays in seconds.`;
  }
  if (!schedule.every((d) => Number.isInteger(d) && d >= 1 && d <= RETRY_DELAY_MAX_SECONDS)) {
    return `Field "retry_schedule" delays must be whole seconds 1-${RETRY_DELAY_MAX_SECONDS}.`;
  }
  return undefined;
}

/**
 * Checks settings given for a destination of `kind`. Retry settings are
 * refused on agent destinations rather than stored and ignored: agents retry
 * by environment (production retries, development never does), so a value
 * there would read as if it did something.
 */
export function settingsProblem(s: ForwardSettings, kind: 'https' | 'agent'): string | undefined {
  if (kind === 'agent') {
    const given = RETRY_FIELDS.filter((f) => s[f] !== undefined);
    if (given.length > 0) {
      return `Field "${given[0]}" does not apply to agent destinations: production agents retry retryable failures and development agents never retry.`;
    }
  }
  if (s.method_override !== undefined) {
    const p = methodProblem(s.method_override);
    if (p) return p;
  }
  if (s.retry_schedule !== undefined) {
    const p = retryScheduleProblem(s.retry_schedule);
    if (p) return p;
  }
  if (s.rate_limit_per_minute !== undefined && s.rate_limit_per_minute !== null) {
    const r = s.rate_limit_per_minute;
    if (!Number.isInteger(r) || r < 1 || r > RATE_LIMIT_MAX_PER_MINUTE) return `Field "rate_limit_per_minute" must be an integer 1-${RATE_LIMIT_MAX_PER_MINUTE}.`;
  }
  if (s.filter !== undefined) return validateFilter(s.filter);
  return undefined;
}

/** Smooth delivery needs a rate: checked on the state a create or PATCH would leave. */
export function rateLimitProblem(enabled: boolean, perMinute: number | null): string | undefined {
  if (enabled && perMinute === null) return 'Field "rate_limit_per_minute" is required when rate_limit_enabled is true.';
  return undefined;
}

/** The fields PATCH /v1/endpoints/:id/destinations/:destination_id takes. */
export interface ForwardPatch extends ForwardSettings {
  name?: string;
  enabled?: boolean;
  sort_order?: number;
  environment_override?: string | null;
  target_port?: number;
  target_path?: string;
}

const AGENT_ONLY_FIELDS = ['environment_override', 'target_port', 'target_path'] as const;

/** Checks a PATCH against the kind of the destination it edits (the kind itself never changes). */
export function forwardPatchProblem(kind: 'https' | 'agent', patch: ForwardPatch): string | undefined {
  if (kind === 'https') {
    const given = AGENT_ONLY_FIELDS.find((f) => patch[f] !== undefined);
    if (given) return `Field "${given}" applies to agent destinations only.`;
  }
  if (patch.name !== undefined) {
    const p = nameProblem(patch.name);
    if (p) return p;
  }
  if (patch.sort_order !== undefined) {
    const p = sortOrderProblem(patch.sort_order);
    if (p) return p;
  }
  if (patch.target_port !== undefined) {
    const p = targetPortProblem(patch.target_port);
    if (p) return p;
  }
  if (patch.target_path !== undefined) {
    const p = targetPathProblem(patch.target_path);
    if (p) return p;
  }
  if (patch.environment_override !== undefined) {
    const p = environmentOverrideProblem(patch.environment_override);
    if (p) return p;
  }
  return settingsProblem(patch, kind);
}

import { readFileSync } from 'node:fs';

export const PLAN_NAMES = ['free', 'starter', 'pro', 'business', 'self_hosted'] as const;
export type PlanName = (typeof PLAN_NAMES)[number];

export interface PlanLimits {
  max_endpoints: number;
  max_forward_destinations: number;
  max_agents: number;
  incident_replay: boolean;
  retention_days: number;
}

export type PlanTable = Record<PlanName, PlanLimits>;

/**
 * Defaults are generous on purpose: a self-hosted Weir is not a sales funnel.
 * Operators of a hosted Weir tune them with WEIR_PLANS. Incident replay is the
 * one capability the specification reserves for Starter and above.
 *
 * `self_hosted` is what a self-hosted install's first organization gets when
 * WEIR_PLANS is unset (bootstrapPlan below): every capability, and caps set
 * high enough that one team never meets them. Its retention matches
 * business, so the longest retention (and with it the delivery sweep) is
 * unchanged by its existence.
 */
export const DEFAULT_PLANS: PlanTable = {
  free: { max_endpoints: 10, max_forward_destinations: 3, max_agents: 1, incident_replay: false, retention_days: 7 },
  starter: { max_endpoints: 50, max_forward_destinations: 5, max_agents: 3, incident_replay: true, retention_days: 30 },
  pro: { max_endpoints: 250, max_forward_destinations: 10, max_agents: 10, incident_replay: true, retention_days: 90 },
  business: { max_endpoints: 2000, max_forward_destinations: 25, max_agents: 100, incident_replay: true, retention_days: 365 },
  self_hosted: { max_endpoints: 100_000, max_forward_destinations: 100, max_agents: 1000, incident_replay: true, retention_days: 365 },
};

/**
 * The plan of the organization the first start creates. The rule lives here
 * and only here: without WEIR_PLANS nobody is selling plans, so the install's
 * own organization gets everything; an operator who sets WEIR_PLANS sells
 * them, and the first organization starts on free like any customer's.
 */
export function bootstrapPlan(plansConfigured: boolean): PlanName {
  return plansConfigured ? 'free' : 'self_hosted';
}

export function isPlanName(v: unknown): v is PlanName {
  return typeof v === 'string' && (PLAN_NAMES as readonly string[]).includes(v);
}

/** Merges an override object (the parsed WEIR_PLANS value) over the defaults; throws on any unknown or mistyped key. */
export function mergePlans(override: unknown): PlanTable {
  if (override === null || typeof override !== 'object' || Array.isArray(override)) throw new Error('must be a JSON object keyed by plan name');
  const out: PlanTable = structuredClone(DEFAULT_PLANS);
  for (const [plan, limits] of Object.entries(override)) {
    if (!isPlanName(plan)) throw new Error(`unknown plan "${plan}" (plans are ${PLAN_NAMES.join(', ')})`);
    if (limits === null || typeof limits !== 'object' || Array.isArray(limits)) throw new Error(`plan "${plan}" must be an object`);
    for (const [k, v] of Object.entries(limits)) {
      if (k === 'incident_replay') {
        if (typeof v !== 'boolean') throw new Error(`${plan}.incident_replay must be a boolean`);
        out[plan].incident_replay = v;
      } else if (k === 'max_endpoints' || k === 'max_forward_destinations' || k === 'max_agents' || k === 'retention_days') {
        if (!Number.isInteger(v) || (v as number) < 0) throw new Error(`${plan}.${k} must be a non-negative integer`);
        out[plan][k] = v as number;
      } else {
        throw new Error(`unknown limit "${plan}.${k}"`);
      }
    }
  }
  return out;
}

/**
 * WEIR_PLANS is either inline JSON (it starts with `{`, which no sensible
 * file name does) or the path of a JSON file; both are merged the same way.
 */
export function loadPlans(value: string): PlanTable {
  let parsed: unknown;
  if (value.trimStart().startsWith('{')) {
    try {
      parsed = JSON.parse(value);
    } catch (err) {
      throw new Error(`is not valid JSON: ${(err as Error).message}`);
    }
  } else {
    try {
      parsed = JSON.parse(readFileSync(value, 'utf8'));
    } catch (err) {
      throw new Error(`cannot read ${value} (give inline JSON starting with "{" or the path of a JSON file): ${(err as Error).message}`);
    }
  }
  return mergePlans(parsed);
}

import { getAgent } from '../agents/agents.ts';
import type { Db } from '../db/db.ts';
import { transformationProblem } from '../transformations/check.ts';
import { attachForwardDestination, type ForwardDestination } from './forward-destinations.ts';
import {
  agentAssignProblem,
  environmentOverrideProblem,
  httpsUrlProblem,
  nameProblem,
  rateLimitProblem,
  SETTINGS_FIELDS,
  settingsProblem,
  targetPathProblem,
  targetPortProblem,
  type ForwardSettings,
  type Visibility,
} from './rules.ts';
import { findEndpoint } from './endpoint-ref.ts';
import { getSavedDestination, insertSavedDestination, listAttachments, type SavedDestination, type Viewer } from './saved-destinations.ts';

/** The body of POST /v1/destinations, both flows, as received (types already checked). */
export interface CreateDestinationInput extends ForwardSettings {
  name: string;
  destination_type?: 'https' | 'agent';
  url?: string;
  endpoint_id?: string;
  visibility?: Visibility;
  is_reusable?: boolean;
  agent_id?: string;
  target_port?: number;
  target_path?: string;
  environment_override?: string | null;
}

export interface CreateContext {
  organizationId: string;
  viewer: Viewer;
  plan: string;
  maxForwardDestinations: number;
}

export type AttachmentError = { code: 'not_found' | 'plan_limit'; message: string };

export type CreateDestinationResult =
  | { ok: true; kind: 'https'; destination: SavedDestination; forwardDestinationId?: string; attachmentError?: AttachmentError }
  | { ok: true; kind: 'agent'; destination: ForwardDestination }
  | { ok: false; reason: 'missing_field' | 'invalid' | 'forbidden' | 'endpoint_not_found' | 'plan_limit'; message: string };

const AGENT_REQUIRED = ['endpoint_id', 'agent_id', 'target_port', 'target_path'] as const;
const AGENT_ONLY = ['agent_id', 'target_port', 'target_path', 'environment_override'] as const;
const SAVED_ONLY = ['url', 'visibility', 'is_reusable'] as const;

const invalid = (message: string) => ({ ok: false, reason: 'invalid', message }) as const;

/** POST /v1/destinations: a saved https destination (optionally attached to an endpoint) or an agent destination. */
export async function createDestination(db: Db, ctx: CreateContext, input: CreateDestinationInput): Promise<CreateDestinationResult> {
  if (input.destination_type === 'agent') {
    const forbidden = agentAssignProblem(ctx.viewer.role);
    if (forbidden) return { ok: false, reason: 'forbidden', message: forbidden };
  }
  // a transformation that does not compile is refused before anything is read or written
  const code = await transformationProblem(input.transformation);
  if (code) return invalid(code);
  return input.destination_type === 'agent' ? createAgentDestination(db, ctx, input) : createHttpsDestination(db, ctx, input);
}

/**
 * The https flow. The saved destination is the main act: when attaching it
 * to `endpoint_id` fails for a reason of the endpoint (absent, at its plan
 * limit) the saved destination is still kept, and the failure is reported
 * beside it. Invalid input creates nothing.
 */
async function createHttpsDestination(db: Db, ctx: CreateContext, input: CreateDestinationInput): Promise<CreateDestinationResult> {
  if (input.url === undefined) return invalid('Field "url" is required for an https destination.');
  const agentField = AGENT_ONLY.find((f) => input[f] !== undefined);
  if (agentField) return invalid(`Field "${agentField}" applies to agent destinations only (send destination_type "agent").`);
  const problem = nameProblem(input.name) ?? httpsUrlProblem(input.url);
  if (problem) return invalid(problem);
  const setting = SETTINGS_FIELDS.find((f) => input[f] !== undefined);
  if (setting && input.endpoint_id === undefined) {
    return invalid(`Field "${setting}" configures the forward destination on an endpoint; send endpoint_id with it.`);
  }
  const settings = settingsProblem(input, 'https') ?? rateLimitProblem(input.rate_limit_enabled ?? false, input.rate_limit_per_minute ?? null);
  if (settings) return invalid(settings);

  const name = input.name.trim();
  return db.transaction(async (tx) => {
    const saved = await insertSavedDestination(tx, {
      organizationId: ctx.organizationId,
      createdBy: ctx.viewer.memberId,
      name,
      url: input.url as string,
      visibility: input.visibility ?? 'org',
      isReusable: input.is_reusable ?? true,
    });
    if (input.endpoint_id === undefined) return { ok: true, kind: 'https', destination: saved };
    const attached = await attachForwardDestination(
      tx,
      { organizationId: ctx.organizationId, endpointId: input.endpoint_id, maxForwardDestinations: ctx.maxForwardDestinations, plan: ctx.plan },
      { ...pickSettings(input), destination_type: 'https', name, url: saved.url, savedDestinationId: saved.id },
    );
    if (attached.ok) return { ok: true, kind: 'https', destination: saved, forwardDestinationId: attached.destination.id };
    const code = attached.reason === 'endpoint_not_found' ? 'not_found' : 'plan_limit';
    return { ok: true, kind: 'https', destination: saved, attachmentError: { code, message: attached.message } };
  });
}

/** The agent flow: one forward destination on the endpoint, no saved record. */
async function createAgentDestination(db: Db, ctx: CreateContext, input: CreateDestinationInput): Promise<CreateDestinationResult> {
  const missing = AGENT_REQUIRED.filter((f) => input[f] === undefined);
  if (missing.length > 0) {
    const list = missing.map((f) => `"${f}"`).join(', ');
    return { ok: false, reason: 'missing_field', message: `An agent destination needs field${missing.length > 1 ? 's' : ''} ${list}.` };
  }
  const savedField = SAVED_ONLY.find((f) => input[f] !== undefined);
  if (savedField) return invalid(`Field "${savedField}" does not apply to agent destinations: agent targets are never saved.`);
  const problem =
    nameProblem(input.name) ??
    targetPortProblem(input.target_port as number) ??
    targetPathProblem(input.target_path as string) ??
    environmentOverrideProblem(input.environment_override ?? null) ??
    settingsProblem(input, 'agent') ??
    rateLimitProblem(input.rate_limit_enabled ?? false, input.rate_limit_per_minute ?? null);
  if (problem) return invalid(problem);

  return db.transaction(async (tx): Promise<CreateDestinationResult> => {
    const agentId = (input.agent_id as string).toLowerCase();
    const agent = await getAgent(tx, ctx.organizationId, agentId);
    // A revoked agent can never connect again, so it is as absent as an unknown one.
    if (!agent || agent.revoked_at) return invalid(`Agent ${agentId} not found in this organization.`);
    const attached = await attachForwardDestination(
      tx,
      { organizationId: ctx.organizationId, endpointId: input.endpoint_id as string, maxForwardDestinations: ctx.maxForwardDestinations, plan: ctx.plan },
      {
        ...pickSettings(input),
        destination_type: 'agent',
        name: input.name.trim(),
        agent_id: agent.id,
        target_port: input.target_port as number,
        target_path: input.target_path as string,
        environment_override: input.environment_override === 'development' ? 'development' : null,
      },
    );
    if (!attached.ok) return { ok: false, reason: attached.reason, message: attached.message };
    return { ok: true, kind: 'agent', destination: attached.destination };
  });
}

function pickSettings(input: ForwardSettings): ForwardSettings {
  const out: ForwardSettings = {};
  for (const f of SETTINGS_FIELDS) if (input[f] !== undefined) (out as Record<string, unknown>)[f] = input[f];
  return out;
}

export interface AttachSavedInput extends ForwardSettings {
  destination_id: string;
  name?: string;
}

export type AttachSavedResult =
  | { ok: true; destination: ForwardDestination }
  | { ok: false; reason: 'invalid' | 'destination_not_found' | 'endpoint_not_found' | 'plan_limit' | 'already_attached'; message: string };

/**
 * Puts a saved destination of the library to work on one more endpoint. A
 * saved destination with is_reusable false is a one-off: it serves the
 * single endpoint it was first attached to and is not attached again.
 */
export async function attachSavedDestination(db: Db, ctx: CreateContext, endpointId: string, input: AttachSavedInput): Promise<AttachSavedResult> {
  const problem =
    (await transformationProblem(input.transformation)) ??
    (input.name !== undefined ? nameProblem(input.name) : undefined) ??
    settingsProblem(input, 'https') ??
    rateLimitProblem(input.rate_limit_enabled ?? false, input.rate_limit_per_minute ?? null);
  if (problem) return { ok: false, reason: 'invalid', message: problem };
  return db.transaction(async (tx): Promise<AttachSavedResult> => {
    // Locked so that a concurrent PATCH of its URL cannot slip between reading it and copying it.
    const saved = await getSavedDestination(tx, ctx.organizationId, ctx.viewer, input.destination_id, { lock: true });
    if (!saved) return { ok: false, reason: 'destination_not_found', message: `Destination ${input.destination_id} not found.` };
    const endpoint = await findEndpoint(tx, ctx.organizationId, endpointId, { lock: true });
    if (!endpoint) return { ok: false, reason: 'endpoint_not_found', message: `Endpoint ${endpointId} not found.` };
    const attachments = await listAttachments(tx, ctx.organizationId, saved.id);
    if (attachments.some((a) => a.endpoint_id === endpoint.id)) {
      return { ok: false, reason: 'already_attached', message: `Destination "${saved.name}" is already attached to endpoint "${endpoint.name}".` };
    }
    if (!saved.is_reusable && attachments.length > 0) {
      return { ok: false, reason: 'invalid', message: `Destination "${saved.name}" is not reusable: it serves only the endpoint it was first attached to.` };
    }
    const attached = await attachForwardDestination(
      tx,
      { organizationId: ctx.organizationId, endpointId: endpoint.id, maxForwardDestinations: ctx.maxForwardDestinations, plan: ctx.plan },
      { ...pickSettings(input), destination_type: 'https', name: input.name?.trim() ?? saved.name, url: saved.url, savedDestinationId: saved.id },
    );
    if (!attached.ok) return { ok: false, reason: attached.reason, message: attached.message };
    return { ok: true, destination: attached.destination };
  });
}

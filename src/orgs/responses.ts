import { ROLES } from '../auth/permissions.ts';
import { answer, bool, dataOf, errors, int, object, oneOfStrings, pageOf, str, time, uuid } from '../http/responses.ts';
import { PLAN_NAMES } from './plans.ts';

export const planLimitsSchema = object(
  { max_endpoints: int, max_forward_destinations: int, max_agents: int, incident_replay: bool, retention_days: int },
  { description: "The plan's limits (defaults in docs/configuration.md, overridden by WEIR_PLANS)." },
);

export const organizationSchema = object(
  { id: uuid, name: str, plan: oneOfStrings(PLAN_NAMES), region: str, created_at: time, updated_at: time },
  { example: { id: '0193a8c2-0000-7000-8000-000000000001', name: 'Acme', plan: 'starter', region: 'us', created_at: '2026-01-01T00:00:00.000Z', updated_at: '2026-01-01T00:00:00.000Z' } },
);

/** GET /admin/v1/organizations/:id adds the plan's limits. */
export const organizationWithLimitsSchema = object({ ...(organizationSchema.properties as object), limits: planLimitsSchema } as never);

export const memberSchema = object(
  { id: uuid, organization_id: uuid, email: str, role: oneOfStrings(ROLES), active: bool, created_at: time, updated_at: time },
  {
    example: {
      id: '0193a8c2-0000-7000-8000-000000000002',
      organization_id: '0193a8c2-0000-7000-8000-000000000001',
      email: 'dev@example.com',
      role: 'developer',
      active: true,
      created_at: '2026-01-01T00:00:00.000Z',
      updated_at: '2026-01-01T00:00:00.000Z',
    },
  },
);

export const memberResponses = {
  page: answer(200, 'A page of members, newest first.', pageOf(memberSchema)),
  one: answer(200, 'The member.', dataOf(memberSchema)),
  invited: { ...answer(201, 'The new member.', dataOf(memberSchema)), ...errors(409) },
  updated: { ...answer(200, 'The member as changed.', dataOf(memberSchema)), ...errors(409) },
};

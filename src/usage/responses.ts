import { answer, arrayOf, bool, dataOf, int, object, oneOfStrings, time } from '../http/responses.ts';
import { PLAN_NAMES } from '../orgs/plans.ts';

const period = (description: string) =>
  object(
    { start: time, end: time, captures: int, bytes_captured: int, forwards: object({ attempted: int, succeeded: int, failed: int }), replayed: int },
    { description },
  );

const daySchema = object({ day: { type: 'string', format: 'date' }, captures: int, bytes_captured: int, forwards: object({ attempted: int, succeeded: int, failed: int }), replayed: int });

const usageSchema = object(
  {
    plan: oneOfStrings(PLAN_NAMES),
    current_period: period('This calendar month (UTC), so far.'),
    days: { ...arrayOf(daySchema), description: "The current period's UTC days up to today, oldest first, with the same counts as current_period." },
    previous_period: period('The calendar month before.'),
    limits: object({
      endpoints: object({ used: int, limit: int }),
      production_agents: object({ used: int, limit: int }),
      forward_destinations_per_endpoint: object({ limit: int }),
      incident_replay: bool,
    }),
    storage: object({ retention_days: int, captures_retained: int, bytes_retained: int }),
  },
  {
    example: {
      plan: 'starter',
      current_period: { start: '2026-01-01T00:00:00.000Z', end: '2026-02-01T00:00:00.000Z', captures: 1204, bytes_captured: 3911022, forwards: { attempted: 1250, succeeded: 1199, failed: 51 }, replayed: 12 },
      days: [{ day: '2026-01-01', captures: 1204, bytes_captured: 3911022, forwards: { attempted: 1250, succeeded: 1199, failed: 51 }, replayed: 12 }],
      previous_period: { start: '2025-12-01T00:00:00.000Z', end: '2026-01-01T00:00:00.000Z', captures: 8710, bytes_captured: 27100442, forwards: { attempted: 8712, succeeded: 8710, failed: 2 }, replayed: 0 },
      limits: { endpoints: { used: 3, limit: 25 }, production_agents: { used: 1, limit: 3 }, forward_destinations_per_endpoint: { limit: 5 }, incident_replay: true },
      storage: { retention_days: 30, captures_retained: 9914, bytes_retained: 31011464 },
    },
  },
);

export const usageResponses = { usage: answer(200, "The organization's usage this period and the last, its limits and what it stores.", dataOf(usageSchema)) };

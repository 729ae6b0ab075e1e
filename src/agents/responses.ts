import { answer, dataOf, errors, noContent, nullableStr, nullableTime, object, oneOfStrings, pageOf, str, time, uuid } from '../http/responses.ts';
import { AGENT_ENVIRONMENTS } from './agents.ts';

const agentProperties = {
  id: uuid,
  name: str,
  environment: oneOfStrings(AGENT_ENVIRONMENTS),
  status: oneOfStrings(['connected', 'disconnected']),
  connected_at: nullableTime,
  last_seen_at: nullableTime,
  agent_version: nullableStr,
  hostname: nullableStr,
  node: { type: ['string', 'null'], description: 'The Weir node holding the connection.' },
  revoked_at: nullableTime,
  created_at: time,
  updated_at: time,
};

const example = {
  id: '0193a8c2-0000-7000-8000-00000000000a',
  name: 'alice-laptop',
  environment: 'development',
  status: 'connected',
  connected_at: '2026-01-01T09:00:00.000Z',
  last_seen_at: '2026-01-01T09:05:00.000Z',
  agent_version: '0.1.0',
  hostname: 'alice-mbp',
  node: 'weir-1',
  revoked_at: null,
  created_at: '2026-01-01T08:59:00.000Z',
  updated_at: '2026-01-01T09:00:00.000Z',
};

/** An agent as presentAgent (routes.ts) writes it. */
export const agentSchema = object(agentProperties, { example });

const token = { type: 'string', description: 'What the agent connects with. Shown only in this answer.' };
const command = { type: 'string', description: 'The command that connects the agent to this server.' };

export const agentResponses = {
  page: answer(200, 'A page of agents, newest first.', pageOf(agentSchema)),
  one: answer(200, 'The agent.', dataOf(agentSchema)),
  enrolled: answer(201, 'The new agent, with its token shown this once.', dataOf(object({ ...agentProperties, token, command, gateway_path: str }))),
  updated: { ...answer(200, 'The agent as changed.', dataOf(agentSchema)), ...errors(409) },
  reissued: { ...answer(200, 'The agent with a new token (the old one stops working).', dataOf(object({ ...agentProperties, token, command }))), ...errors(409) },
  revoked: { ...noContent('Revoked: its connection closes on every node.'), ...errors(409) },
};

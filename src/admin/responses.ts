import { AGENT_ENVIRONMENTS } from '../agents/agents.ts';
import { apiKeySchema, auditEntrySchema, newApiKeySchema } from '../auth/responses.ts';
import { answer, dataOf, errors, listOf, noContent, object, oneOfStrings, pageOf, str, time, uuid } from '../http/responses.ts';
import { memberSchema, organizationSchema, organizationWithLimitsSchema } from '../orgs/responses.ts';

const enrolledAgentSchema = object({
  id: uuid,
  organization_id: uuid,
  name: str,
  environment: oneOfStrings(AGENT_ENVIRONMENTS),
  created_at: time,
  token: { type: 'string', description: 'What `npx weir agent --token` connects with. Shown only in this answer.' },
});

/** The operator API's answers (/admin/v1, docs/configuration.md "Operator API"). */
export const adminResponses = {
  organizationCreated: answer(201, 'The new organization.', dataOf(organizationSchema)),
  organizations: answer(200, 'A page of organizations, newest first.', pageOf(organizationSchema)),
  organization: answer(200, "The organization with its plan's limits.", dataOf(organizationWithLimitsSchema)),
  organizationUpdated: answer(200, 'The organization as changed.', dataOf(organizationSchema)),
  audit: answer(200, "A page of the organization's audit log, newest first.", pageOf(auditEntrySchema)),
  memberCreated: { ...answer(201, 'The new member.', dataOf(memberSchema)), ...errors(409) },
  members: answer(200, "A page of the organization's members, newest first.", pageOf(memberSchema)),
  memberUpdated: { ...answer(200, 'The member as changed.', dataOf(memberSchema)), ...errors(409) },
  keyCreated: answer(201, 'The new key, with `key` shown this once.', dataOf(newApiKeySchema)),
  keys: answer(200, "The member's keys, unpaged.", listOf(apiKeySchema)),
  keyRevoked: noContent('Revoked: the key answers 401 from the next request on.'),
  agentEnrolled: answer(201, 'The new agent, with its token shown this once.', dataOf(enrolledAgentSchema)),
};

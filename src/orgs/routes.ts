import type { FastifyInstance } from 'fastify';
import { grantProblem } from '../auth/grants.ts';
import type { Role } from '../auth/permissions.ts';
import type { AppDeps } from '../http/deps.ts';
import { badRequest, conflict, forbidden, notFound } from '../http/errors.ts';
import { pageQuerySchema, toPage } from '../http/paging.ts';
import { idParams, pathId } from '../http/schemas.ts';
import { createMember, getMember, isEmail, listMembers, updateMember, type Member, type UpdateMemberResult } from './members.ts';
import { memberInviteSchema, memberPatchSchema, presentMember } from './present.ts';
import { memberResponses as R } from './responses.ts';

/** The member a PATCH changed, or the error its refusal maps to (shared with the operator API). */
export function memberOrThrow(result: UpdateMemberResult, id: string): Member {
  if (result.ok) return result.member;
  switch (result.reason) {
    case 'not_found':
      throw notFound(`Member ${id} not found.`);
    case 'escalation':
      throw forbidden(result.message);
    case 'last_super_admin':
      throw conflict('This is the last active super_admin of the organization: promote another member to super_admin first.');
  }
}

export function checkedEmail(email: string): string {
  if (!isEmail(email)) throw badRequest('Field "email" must be an email address.');
  return email;
}

const pageQuery = { type: 'object', additionalProperties: false, properties: pageQuerySchema } as const;

/**
 * Members of the key's organization (/v1/members). The specification names
 * only the scopes members:invite ("invite members") and members:manage
 * ("deactivate and reactivate members"); listing and reading members go with
 * members:manage, since managing starts from the list. Nobody grants a role
 * above their own, and nobody demotes or deactivates the last active super_admin.
 */
export function memberRoutes(app: FastifyInstance, { db, authenticator }: AppDeps): void {
  app.get<{ Querystring: { limit: number; before?: string } }>(
    '/members',
    { config: { auth: { scopes: ['members:manage'], permission: 'members.view' } }, schema: { querystring: pageQuery, response: R.page } },
    async (request) => {
      const { limit, before } = request.query;
      const rows = await listMembers(db, request.auth.organizationId, limit + 1, before);
      return { data: toPage(rows, limit, presentMember) };
    },
  );

  app.get<{ Params: { id: string } }>(
    '/members/:id',
    { config: { auth: { scopes: ['members:manage'], permission: 'members.view' } }, schema: { params: idParams, response: R.one } },
    async (request) => {
      const id = pathId(request.params.id, 'Member');
      const member = await getMember(db, id, request.auth.organizationId);
      if (!member) throw notFound(`Member ${id} not found.`);
      return { data: presentMember(member) };
    },
  );

  app.post<{ Body: { email: string; role: Role } }>(
    '/members',
    { config: { auth: { scopes: ['members:invite'], permission: 'members.invite' } }, schema: { body: memberInviteSchema, response: R.invited } },
    async (request, reply) => {
      const a = request.auth;
      const email = checkedEmail(request.body.email);
      const { role } = request.body;
      const refused = grantProblem(a.role, { kind: 'member', newRole: role });
      if (refused) throw forbidden(refused);
      const result = await db.transaction((tx) =>
        createMember(tx, { organizationId: a.organizationId, email, role }, { type: 'member', memberId: a.memberId }),
      );
      if (!result.ok) throw conflict(`A member with email ${email} already exists in this organization.`);
      return reply.status(201).send({ data: presentMember(result.member) });
    },
  );

  app.patch<{ Params: { id: string }; Body: { role?: Role; active?: boolean } }>(
    '/members/:id',
    { config: { auth: { scopes: ['members:manage'], permission: 'members.manage' } }, schema: { params: idParams, body: memberPatchSchema, response: R.updated } },
    async (request) => {
      const a = request.auth;
      const id = pathId(request.params.id, 'Member');
      const result = await authenticator.commitChange((tx) =>
        updateMember(tx, id, request.body, { type: 'member', memberId: a.memberId }, { organizationId: a.organizationId, actorRole: a.role }),
      );
      return { data: presentMember(memberOrThrow(result, id)) };
    },
  );
}

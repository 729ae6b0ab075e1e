import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../http/deps.ts';
import { badRequest, notFound } from '../http/errors.ts';
import { answer, bool, dataOf, nullableStr, object } from '../http/responses.ts';
import { idParams, pathId } from '../http/schemas.ts';
import { getCapture } from '../requests/captures.ts';
import { compileFilter, evaluate, filterInput, validateFilter } from './filter.ts';
import { filterSetting } from './schemas.ts';

const filterTestBody = {
  type: 'object',
  additionalProperties: false,
  required: ['filter'],
  properties: { filter: filterSetting },
} as const;

const filterTestResponse = answer(
  200,
  'Whether the stored capture matches the filter, and if not, the first rule that failed.',
  dataOf(
    object(
      { matches: bool, reason: { ...nullableStr, description: 'Null when it matches.' } },
      { example: { matches: false, reason: 'body.type: expected $startsWith "invoice." got "charge.succeeded"' } },
    ),
  ),
);

/** POST /v1/requests/:id/filter-test: try a filter on a stored capture before saving it on a destination (docs/routing.md). */
export function routingRoutes(app: FastifyInstance, { db }: AppDeps): void {
  app.post<{ Params: { id: string }; Body: { filter: unknown } }>(
    '/requests/:id/filter-test',
    {
      config: { auth: { scopes: ['requests:read'], permission: 'requests.view' } },
      schema: { params: idParams, body: filterTestBody, response: filterTestResponse },
    },
    async (request) => {
      const requestId = pathId(request.params.id, 'Request');
      const problem = validateFilter(request.body.filter);
      if (problem) throw badRequest(problem);
      const capture = await getCapture(db, request.auth.organizationId, requestId);
      if (!capture) throw notFound(`Request ${requestId} not found.`);
      const compiled = compileFilter(request.body.filter);
      return { data: evaluate(compiled, filterInput(capture, compiled.usesBody)) };
    },
  );
}

/**
 * Test-only rows inserted with plain SQL, for tests of modules that need a
 * record of another module without going through that module's API.
 */
import { randomBytes } from 'node:crypto';
import type { Queryable } from '../../src/db/db.ts';
import { newId } from '../../src/db/ids.ts';

export interface EndpointFixture {
  id: string;
  organization_id: string;
  name: string;
  slug: string;
}

/** An endpoint row of the organization (slug random, no forward_url unless given). */
export async function insertEndpoint(
  db: Queryable,
  organizationId: string,
  opts: { name?: string; forwardUrl?: string | null; createdBy?: string | null } = {},
): Promise<EndpointFixture> {
  const id = newId();
  const slug = randomBytes(8).toString('hex');
  const name = opts.name ?? `endpoint-${slug.slice(0, 6)}`;
  await db.query(
    `insert into endpoints (id, organization_id, created_by, slug, name, forward_url) values ($1::uuid, $2::uuid, $3::uuid, $4, $5, $6)`,
    [id, organizationId, opts.createdBy ?? null, slug, name, opts.forwardUrl ?? null],
  );
  return { id, organization_id: organizationId, name, slug };
}

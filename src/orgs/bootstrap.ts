import type { Db } from '../db/db.ts';
import type { PlanName } from './plans.ts';
import { createApiKey } from '../auth/api-keys.ts';
import { createMember } from './members.ts';
import { countOrganizations, createOrganization, type Organization } from './organizations.ts';

const BOOTSTRAP_LOCK_KEY = 7_420_913_002;

export interface BootstrapResult {
  organization: Organization;
  email: string;
  key: string;
}

/**
 * On first start with an empty database: a default organization (on the
 * plan config.bootstrapPlan names: self_hosted, or free when WEIR_PLANS is set),
 * a super_admin member and a full-access key. Several nodes may start at
 * once; the advisory lock lets exactly one of them create (and print) it.
 */
export async function bootstrapIfEmpty(db: Db, region: string, plan: PlanName): Promise<BootstrapResult | undefined> {
  return db.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock($1)', [BOOTSTRAP_LOCK_KEY]);
    if ((await countOrganizations(tx)) > 0) return undefined;
    const system = { type: 'system' } as const;
    const organization = await createOrganization(tx, { name: 'Default', plan, region });
    const email = 'admin@localhost';
    const member = await createMember(tx, { organizationId: organization.id, email, role: 'super_admin' }, system);
    if (!member.ok) throw new Error('bootstrap member could not be created');
    const key = await createApiKey(tx, { memberId: member.member.id, name: 'bootstrap', accessMode: 'full', scopes: [] }, system);
    if (!key.ok) throw new Error('bootstrap key could not be created');
    return { organization, email, key: key.key };
  });
}

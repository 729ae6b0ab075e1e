import { sandbox } from './sandbox.ts';

/**
 * Why a transformation given to a destination cannot be saved (a 400
 * bad_request naming the line and column), or undefined. Null and absent
 * are fine: no transformation, or no change.
 */
export async function transformationProblem(t: { code: string } | null | undefined): Promise<string | undefined> {
  if (t === undefined || t === null) return undefined;
  const p = await sandbox.compileProblem(t.code);
  if (!p) return undefined;
  const where = p.line !== null ? ` at line ${p.line}, column ${p.column}` : '';
  return `Field "transformation.code" does not compile${where}: ${p.message}.`;
}

import { httpsTargetUrlProblem } from '../delivery/target-url.ts';
import { verificationProblem, type VerificationInput } from '../verification/settings.ts';
import { ingestResponseProblem } from './ingest-response.ts';

/** Fields a client may set on an endpoint, in domain spelling. undefined = not given. */
export interface EndpointFields {
  name?: string;
  description?: string | null;
  forwardUrl?: string | null;
  /** The custom ingest answer (ingest-response.ts); null restores the default. */
  response?: { status: number; headers?: Record<string, string>; body?: string } | null;
  /** Signature verification (src/verification/settings.ts); null removes it. */
  verification?: VerificationInput | null;
  /** Duplicate suppression (src/routing/dedup.ts, which validates it); null removes it. */
  deduplication?: unknown;
}

export const NAME_MAX = 100;
/** The specification sets no bound on descriptions; this one keeps rows and list responses small. */
export const DESCRIPTION_MAX = 2000;

/** Length in characters as people count them (code points), as JSON Schema's maxLength does. */
function chars(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/** Why a forward_url is unacceptable, or undefined. The specification's rule: it must start with https://. */
export function forwardUrlProblem(url: string): string | undefined {
  return httpsTargetUrlProblem(url, 'forward_url', { httpsHint: ' (or be null to disable forwarding)' });
}

/** The endpoint rules of the specification; the first broken one as a sentence, or undefined. */
export function endpointInputProblem(input: EndpointFields): string | undefined {
  if (input.name !== undefined) {
    const n = chars(input.name);
    if (n < 1 || n > NAME_MAX) return `Field "name" must be 1-${NAME_MAX} characters long (got ${n}).`;
  }
  if (typeof input.description === 'string') {
    if (chars(input.description) > DESCRIPTION_MAX) return `Field "description" must be at most ${DESCRIPTION_MAX} characters long.`;
  }
  if (typeof input.forwardUrl === 'string') {
    const problem = forwardUrlProblem(input.forwardUrl);
    if (problem) return problem;
  }
  if (input.response !== undefined) {
    const problem = ingestResponseProblem(input.response);
    if (problem) return problem;
  }
  if (input.verification !== undefined) return verificationProblem(input.verification);
  return undefined;
}

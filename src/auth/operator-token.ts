import { createHash, timingSafeEqual } from 'node:crypto';
import { parseBearer } from './authenticate.ts';

// The check of a fixed operator token (WEIR_ADMIN_TOKEN for /admin/v1,
// WEIR_METRICS_TOKEN for /metrics). Here, not in the operator API's route
// module, so the metrics scrape does not import another route module for it.

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

/** Constant-time comparison of the presented token with WEIR_ADMIN_TOKEN (hashing first equalises lengths). */
export function adminTokenMatches(header: string | undefined, expected: string): boolean {
  const given = parseBearer(header);
  return given !== undefined && timingSafeEqual(digest(given), digest(expected));
}

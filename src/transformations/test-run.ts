import type { Config } from '../config.ts';
import type { CapturedMessage } from '../delivery/forward-request.ts';
import type { Capture } from '../requests/captures.ts';
import { applyOutput, toSandboxInput, type SandboxRequest } from './request.ts';
import { limitsOf, sandbox } from './sandbox.ts';

export type TestResult =
  | { ok: true; request: (SandboxRequest & { body_base64?: string }) | null; logs: string[]; durationMs: number }
  | { ok: false; message: string };

/**
 * Runs `code` against a stored capture as a delivery would (the same input,
 * limits and output rules), in a runtime of its own that is discarded
 * after, and shows what would be sent in the handler's own shape.
 */
export async function testTransformation(
  capture: Capture,
  code: string,
  destinationId: string | null,
  config: Pick<Config, 'transformCpuMs' | 'transformMemoryBytes' | 'maxBodyBytes'>,
): Promise<TestResult> {
  const limits = limitsOf(config);
  const message: CapturedMessage = {
    id: capture.id,
    method: capture.method,
    path: capture.path,
    query: capture.query,
    headers: capture.headers,
    body: capture.body,
    verification: capture.verification_status ?? null,
  };
  const input = toSandboxInput(message, capture.method, { endpointId: capture.endpoint_id, destinationId, receivedAt: capture.received_at });
  const run = await sandbox.run(code, input, { scope: `test:${capture.organization_id}`, limits, fresh: true });
  if (!run.ok) return { ok: false, message: run.error === 'transformation_error' ? `transformation_error: ${run.message}` : run.error };
  if (run.output === null) return { ok: true, request: null, logs: run.logs, durationMs: run.durationMs };
  const applied = applyOutput(run.output, message, input.request, limits.maxOutputBytes);
  if (!applied.ok) return { ok: false, message: `transformation_error: ${applied.message}` };
  const shown = toSandboxInput(applied.capture, applied.method, { endpointId: capture.endpoint_id, destinationId, receivedAt: capture.received_at });
  const request = { ...shown.request, ...(shown.context.body_base64 !== undefined ? { body_base64: shown.context.body_base64 } : {}) };
  return { ok: true, request, logs: run.logs, durationMs: run.durationMs };
}

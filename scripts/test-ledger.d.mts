/** Types for scripts/test-ledger.mjs, a reporter for Node's test runner. */
export default function ledger(source: AsyncIterable<{ type: string; data: Record<string, unknown> }>): AsyncGenerator<string>;

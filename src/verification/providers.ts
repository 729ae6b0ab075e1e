/**
 * The providers Weir verifies and the two outcomes: a table with no rule in
 * it, so the metric registry (a base module) can name its bounded labels
 * without importing the verifier (docs/architecture.md).
 */
export const PROVIDERS = ['stripe', 'github', 'shopify', 'slack', 'standard_webhooks', 'twilio', 'hmac'] as const;
export type Provider = (typeof PROVIDERS)[number];
export type VerificationStatus = 'verified' | 'failed';

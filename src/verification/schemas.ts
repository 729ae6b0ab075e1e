/**
 * JSON schemas of verification: the setting a client writes on an endpoint,
 * what reads show of it, and what a capture carries. Types and closed sets
 * only; the rules with messages are settings.ts's, so every caller gets the
 * same ones.
 */
import { HMAC_ALGORITHMS, HMAC_ENCODINGS, PROVIDERS, REASONS } from './verify.ts';

/** The request body's `verification` on POST and PATCH /v1/endpoints. */
export const verificationSetting = {
  type: ['object', 'null'],
  description:
    'Signature verification of every capture (docs/verification.md); null removes it. `secret` is write-only: reads show `secret_last4`. On PATCH, leave `secret` out to keep the stored one (same provider); send a new one with `previous_secret_expires_at` to keep the old one valid until then.',
  additionalProperties: false,
  required: ['provider'],
  properties: {
    provider: { type: 'string', enum: [...PROVIDERS] },
    secret: { type: 'string', description: "The provider's signing secret (8-1024 characters; `whsec_...` for standard_webhooks). Never returned." },
    enforce: { type: 'boolean', description: 'true: a failed verification answers the sender 401 and the capture is stored (rejected) but not forwarded. Default false.' },
    tolerance_seconds: { type: 'integer', description: 'How far a signed timestamp may be from now (stripe, slack, standard_webhooks). Default 300.' },
    header: { type: 'string', description: 'hmac only: the header holding the signature.' },
    algorithm: { type: 'string', enum: [...HMAC_ALGORITHMS], description: 'hmac only.' },
    encoding: { type: 'string', enum: [...HMAC_ENCODINGS], description: 'hmac only.' },
    prefix: { type: ['string', 'null'], description: 'hmac only: text before the signature in the header, e.g. `sha256=`.' },
    previous_secret_expires_at: {
      type: ['string', 'null'],
      description: 'With a new `secret`: the current secret keeps verifying until this time (ISO 8601, at most 30 days ahead).',
    },
  },
  examples: [{ provider: 'stripe', secret: 'whsec_5257a869e7ecebeda32affa62cdc3fa5', enforce: true }],
} as const;

/** The endpoint's `verification` as reads show it. */
export const verificationView = {
  type: ['object', 'null'],
  description: 'Signature verification (docs/verification.md), or null. The secret itself is never shown: `secret_last4` is its end.',
  additionalProperties: false,
  required: ['provider', 'enforce', 'tolerance_seconds', 'header', 'algorithm', 'encoding', 'prefix', 'secret_last4', 'previous_secret_expires_at'],
  properties: {
    provider: { type: 'string', enum: [...PROVIDERS] },
    enforce: { type: 'boolean' },
    tolerance_seconds: { type: 'integer' },
    header: { type: ['string', 'null'], description: 'hmac only (lowercased), else null.' },
    algorithm: { type: ['string', 'null'], enum: [...HMAC_ALGORITHMS, null] },
    encoding: { type: ['string', 'null'], enum: [...HMAC_ENCODINGS, null] },
    prefix: { type: ['string', 'null'] },
    secret_last4: { type: 'string', description: "The secret's last four characters." },
    previous_secret_expires_at: { type: ['string', 'null'], format: 'date-time', description: 'Until when the previous secret still verifies, while an overlap runs.' },
  },
} as const;

export const EXAMPLE_VERIFICATION_VIEW = {
  provider: 'stripe',
  enforce: true,
  tolerance_seconds: 300,
  header: null,
  algorithm: null,
  encoding: null,
  prefix: null,
  secret_last4: '3fa5',
  previous_secret_expires_at: null,
};

/** A capture's `verification`. */
export const captureVerification = {
  type: ['object', 'null'],
  description: "What the endpoint's signature verification said of this capture; null when the endpoint had none.",
  additionalProperties: false,
  required: ['status', 'reason'],
  properties: {
    status: { type: 'string', enum: ['verified', 'failed'] },
    reason: { type: ['string', 'null'], enum: [...REASONS, null], description: 'null when verified.' },
  },
} as const;

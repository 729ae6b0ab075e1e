/**
 * The capture the document shows as an example, and the one a
 * request.captured sample sends when an endpoint has captured nothing yet
 * (src/subscriptions/samples.ts, docs/subscriptions.md). In the shape of
 * presentCapture (present.ts). A module of its own, not schemas.ts, so the
 * sample (a domain module) need not import the API's response schemas.
 */
export const EXAMPLE_CAPTURE = {
  id: '0190a3c2-5b1e-7c4d-8e2f-3a4b5c6d7e8f',
  endpoint_id: '0193a8c2-4e1f-7a3b-9c2d-5e6f7a8b9c0d',
  received_at: '2026-01-01T00:00:00.000Z',
  method: 'POST',
  path: '/stripe',
  query: '',
  headers: [
    { name: 'Content-Type', value: 'application/json' },
    { name: 'Stripe-Signature', value: 't=1767225600,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd' },
  ],
  content_type: 'application/json',
  body_size: 56,
  source_ip: '203.0.113.7',
  verification: { status: 'verified', reason: null },
  rejected: false,
  duplicate_of: null,
  body: '{"id":"evt_1","type":"payment_intent.succeeded","data":{}}',
  body_encoding: 'utf8',
};

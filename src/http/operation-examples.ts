/**
 * Examples of success answers whose schemas carry none of their own (a page
 * of a resource without an example, or a resource with fields added for one
 * route), used by src/http/operations.ts. They reuse the domain modules'
 * examples where one exists, so one resource reads the same everywhere; the
 * ids cross-reference (the key's member is the audit entries' actor, the
 * incident's failures are the forward's). test/http/openapi-operations.test.ts
 * validates each against its route's response schema.
 */
import { EXAMPLE_INCIDENT } from '../subscriptions/samples.ts';

const ORG = '0193a8c2-0000-7000-8000-000000000001';
const MEMBER = '0193a8c2-0000-7000-8000-000000000002';
const ENDPOINT = '0193a8c2-4e1f-7a3b-9c2d-5e6f7a8b9c0d';
const REQUEST = '0190a3c2-5b1e-7c4d-8e2f-3a4b5c6d7e8f';
const page = <T>(items: T[], hasMore = false) => ({ data: { data: items, meta: { count: items.length, has_more: hasMore, next_cursor: hasMore ? (items.at(-1) as { id: string }).id : null } } });

/** A key at creation: `key` is shown this once (its display_prefix is its start; the checksum is valid). */
const newApiKey = (name: string, accessMode: 'full' | 'custom', scopes: string[], expiresAt: string | null, createdBy: string | null) => ({
  id: '0193a8c2-0000-7000-8000-000000000004',
  name,
  display_prefix: 'wr_live_us_ANGa',
  organization_id: ORG,
  member_id: MEMBER,
  access_mode: accessMode,
  scopes,
  expires_at: expiresAt,
  revoked_at: null,
  last_used_at: null,
  created_by: createdBy,
  created_at: '2026-01-01T00:00:00.000Z',
  key: 'wr_live_us_ANGaTsjaY80EnaALxOK3Vm6qIoqtetCc0jyJiG',
});

export const CREATE_API_KEY = { data: newApiKey('CI deploys', 'custom', ['endpoints:read', 'requests:read'], '2027-01-01T00:00:00.000Z', MEMBER) };
/** The operator mints keys for no member (created_by null), full access unless told otherwise. */
export const ADMIN_CREATE_API_KEY = { data: newApiKey('bootstrap', 'full', [], null, null) };

const AUDIT_ENTRIES = [
  {
    id: '0193a8c2-0000-7000-8000-0000000000e3',
    organization_id: ORG,
    actor_type: 'member',
    actor_id: MEMBER,
    action: 'member.role_changed',
    target_type: 'member',
    target_id: '0193a8c2-0000-7000-8000-000000000005',
    target_name: 'grace@example.com',
    details: { from: 'developer', to: 'viewer' },
    created_at: '2026-01-02T09:30:00.000Z',
  },
  {
    id: '0193a8c2-0000-7000-8000-0000000000e2',
    organization_id: ORG,
    actor_type: 'member',
    actor_id: MEMBER,
    action: 'api_key.created',
    target_type: 'api_key',
    target_id: '0193a8c2-0000-7000-8000-000000000004',
    target_name: 'CI deploys',
    details: { member_id: MEMBER, access_mode: 'custom', scopes: ['endpoints:read', 'requests:read'] },
    created_at: '2026-01-01T00:00:00.000Z',
  },
];
export const LIST_AUDIT_LOG = page(AUDIT_ENTRIES, true);
/** The operator's view adds what it did itself (actor_type operator, no actor id). */
export const ADMIN_LIST_AUDIT_LOG = page([
  ...AUDIT_ENTRIES,
  {
    id: '0193a8c2-0000-7000-8000-0000000000e1',
    organization_id: ORG,
    actor_type: 'operator',
    actor_id: null,
    action: 'member.created',
    target_type: 'member',
    target_id: MEMBER,
    target_name: 'ada@example.com',
    details: { role: 'super_admin' },
    created_at: '2025-12-31T23:59:00.000Z',
  },
]);

export const LIST_DESTINATIONS = page([
  {
    id: '0193a8c2-0000-7000-8000-0000000000d2',
    name: 'Production API',
    url: 'https://api.example.com/webhooks',
    visibility: 'org',
    is_reusable: true,
    created_by: MEMBER,
    created_at: '2026-01-03T00:00:00.000Z',
    updated_at: '2026-01-03T00:00:00.000Z',
    endpoint_count: 2,
  },
  {
    id: '0193a8c2-0000-7000-8000-0000000000d1',
    name: 'Staging API',
    url: 'https://staging.example.com/webhooks',
    visibility: 'org',
    is_reusable: true,
    created_by: MEMBER,
    created_at: '2026-01-01T00:00:00.000Z',
    updated_at: '2026-01-01T00:00:00.000Z',
    endpoint_count: 1,
  },
]);

/** One delivery that failed once (503, retried 60 s later per the retry schedule) and then succeeded. */
export const LIST_REQUEST_FORWARDS = page([
  {
    id: '0193a8c2-0000-7000-8000-000000000011',
    request_id: REQUEST,
    endpoint_id: ENDPOINT,
    destination_id: '0193a8c2-0000-7000-8000-0000000000f1',
    destination_name: 'Staging API',
    destination_type: 'https',
    url: 'https://staging.example.com/webhooks',
    agent_id: null,
    webhook_id: `msg_${REQUEST}`,
    status: 'succeeded',
    attempt_count: 2,
    next_attempt_at: null,
    last_status_code: 200,
    last_error: null,
    filter_reason: null,
    replay_batch_id: null,
    created_at: '2026-01-01T00:00:00.010Z',
    updated_at: '2026-01-01T00:01:00.250Z',
    attempts: [
      {
        id: '0193a8c2-0000-7000-8000-000000000021',
        attempt_number: 1,
        started_at: '2026-01-01T00:00:00.020Z',
        duration_ms: 41.7,
        url: 'https://staging.example.com/webhooks',
        status_code: 503,
        error_class: 'http_status',
        error_message: 'HTTP 503',
        response_headers: [
          ['content-type', 'text/plain'],
          ['retry-after', '30'],
        ],
        response_body: 'Service Unavailable',
        response_body_encoding: 'utf8',
        response_body_truncated: false,
        transformation_hash: null,
        scheduled_at: null,
      },
      {
        id: '0193a8c2-0000-7000-8000-000000000022',
        attempt_number: 2,
        started_at: '2026-01-01T00:01:00.200Z',
        duration_ms: 38.2,
        url: 'https://staging.example.com/webhooks',
        status_code: 200,
        error_class: null,
        error_message: null,
        response_headers: [['content-type', 'application/json']],
        response_body: '{"received":true}',
        response_body_encoding: 'utf8',
        response_body_truncated: false,
        transformation_hash: null,
        scheduled_at: null,
      },
    ],
  },
]);

/** EXAMPLE_INCIDENT with two of its twelve failures and its timeline. */
export const GET_INCIDENT = {
  data: {
    ...EXAMPLE_INCIDENT,
    unreplayed_count: 11,
    latest_replay_batch_id: null,
    failures: [
      {
        request_id: '0193a8c2-0000-7000-8000-0000000000c2',
        endpoint_id: ENDPOINT,
        destination_id: EXAMPLE_INCIDENT.destination_id,
        destination_url: EXAMPLE_INCIDENT.destination_url,
        status: 'retrying',
        next_attempt_at: '2026-01-01T00:10:00.000Z',
        status_code: 503,
        error: 'HTTP 503',
        error_class: 'http_status',
        failed_at: '2026-01-01T00:05:00.000Z',
        recovered_at: null,
        replayed_at: null,
        replay_status_code: null,
      },
      {
        request_id: '0193a8c2-0000-7000-8000-0000000000c1',
        endpoint_id: ENDPOINT,
        destination_id: EXAMPLE_INCIDENT.destination_id,
        destination_url: EXAMPLE_INCIDENT.destination_url,
        status: 'recovered',
        next_attempt_at: null,
        status_code: 503,
        error: 'HTTP 503',
        error_class: 'http_status',
        failed_at: '2026-01-01T00:00:00.000Z',
        recovered_at: '2026-01-01T00:01:00.000Z',
        replayed_at: null,
        replay_status_code: null,
      },
    ],
    updates: [
      {
        id: '0193a8c2-0000-7000-8000-000000000032',
        body: 'Staging was redeployed; retrying.',
        is_system: false,
        author_id: MEMBER,
        created_at: '2026-01-01T00:07:00.000Z',
      },
      {
        id: '0193a8c2-0000-7000-8000-000000000031',
        body: 'Incident opened: forwards to Staging API fail.',
        is_system: true,
        author_id: '00000000-0000-0000-0000-000000000000',
        created_at: EXAMPLE_INCIDENT.created_at,
      },
    ],
  },
};

const AGENT_TOKEN = 'wr_agent_Jx7Qm2Lr9Tb4Wc8Yn1Pd6Hs3Kf5Gv0Zq2Ue7Ri4Oa9X';

/** The agent as before, with a new token; its connection on the old one has closed. */
export const ROTATE_AGENT_TOKEN = {
  data: {
    id: '0193a8c2-0000-7000-8000-00000000000a',
    name: 'alice-laptop',
    environment: 'development',
    status: 'disconnected',
    connected_at: null,
    last_seen_at: '2026-01-01T09:05:00.000Z',
    agent_version: '0.1.0',
    hostname: 'alice-mbp',
    node: null,
    revoked_at: null,
    created_at: '2026-01-01T08:59:00.000Z',
    updated_at: '2026-01-01T09:10:00.000Z',
    token: AGENT_TOKEN,
    command: `npx weir agent --server https://weir.example.com --token ${AGENT_TOKEN}`,
  },
};

export const ADMIN_CREATE_AGENT = {
  data: { id: '0193a8c2-0000-7000-8000-0000000000a8', organization_id: ORG, name: 'edge-1', environment: 'production', created_at: '2026-01-01T00:00:00.000Z', token: AGENT_TOKEN },
};

/** A delivered event and one waiting for its second attempt. */
export const LIST_SUBSCRIPTION_EVENTS = page([
  {
    id: '0193a8c2-0000-7000-8000-000000000042',
    webhook_id: 'evt_0193a8c2-0000-7000-8000-000000000042',
    type: 'incident.opened',
    status: 'pending',
    attempt_count: 1,
    next_attempt_at: '2026-01-01T00:05:31.000Z',
    last_status_code: 502,
    last_error: 'HTTP 502',
    last_attempt_at: '2026-01-01T00:05:01.500Z',
    created_at: '2026-01-01T00:05:01.000Z',
  },
  {
    id: '0193a8c2-0000-7000-8000-000000000041',
    webhook_id: 'evt_0193a8c2-0000-7000-8000-000000000041',
    type: 'request.captured',
    status: 'succeeded',
    attempt_count: 1,
    next_attempt_at: null,
    last_status_code: 200,
    last_error: null,
    last_attempt_at: '2026-01-01T00:00:00.300Z',
    created_at: '2026-01-01T00:00:00.000Z',
  },
]);

export const ADMIN_GET_ORGANIZATION = {
  data: {
    id: ORG,
    name: 'Acme',
    plan: 'starter',
    region: 'us',
    created_at: '2026-01-01T00:00:00.000Z',
    updated_at: '2026-01-01T00:00:00.000Z',
    limits: { max_endpoints: 50, max_forward_destinations: 5, max_agents: 3, incident_replay: true, retention_days: 30 },
  },
};

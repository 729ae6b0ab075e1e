/**
 * The name, one-line summary and tag of every operation of the API, keyed by
 * `METHOD /openapi/path`: what client generators turn into method names, so
 * an id never changes when a path does. One style: verb + resource in
 * lowerCamelCase (listEndpoints, createEndpoint, replayIncident). Scopes and
 * role permissions are not repeated here: the document takes them from each
 * route's `config.auth` (src/http/openapi.ts). A route missing from this
 * table is published without an id, and test/http/openapi-operations.test.ts
 * fails; `requestExample` and `responseExample` are checked against the
 * route's schemas there, and a JSON success answer without any example fails it.
 */
import { EXAMPLE_CAPTURE } from '../requests/example.ts';
import * as EX from './operation-examples.ts';

export interface OperationInfo {
  id: string;
  summary: string;
  /** The resource it belongs to, when the path's first segment is not it (nested routes). */
  tag?: string;
  requestExample?: unknown;
  /** An example of the success answer, where the answer's schema has none of its own. */
  responseExample?: unknown;
}

const { body: _body, body_encoding: _encoding, ...EXAMPLE_CAPTURE_SUMMARY } = EXAMPLE_CAPTURE;

const UUID_A = '0193a8c2-0000-7000-8000-000000000001';
const UUID_B = '0193a8c2-0000-7000-8000-000000000002';

export const OPERATIONS: Record<string, OperationInfo> = {
  'GET /v1/me': {
    id: 'getMe',
    summary: 'Who the key acts as',
    tag: 'account',
    responseExample: {
      data: {
        organization: {
          id: UUID_A,
          name: 'Acme',
          plan: 'starter',
          region: 'us',
          limits: { max_endpoints: 10, max_forward_destinations: 20, max_agents: 5, incident_replay: true, retention_days: 7 },
        },
        member: { id: UUID_B, email: 'ada@example.com', role: 'developer' },
        api_key: { id: '0193a8c2-0000-7000-8000-0000000000f1', name: 'CI', access_mode: 'custom', scopes: ['endpoints:read', 'requests:read'], expires_at: null, effective_role: 'developer' },
        permissions: ['endpoints.view', 'requests.view'],
      },
    },
  },
  'GET /v1/health': {
    id: 'getHealth',
    summary: 'Check the API and database are up',
    tag: 'account',
    responseExample: { data: { status: 'ok', version: '0.1.0', database: { kind: 'postgres', reachable: true, latency_ms: 0.8 }, notifications: 'connected' } },
  },

  'GET /v1/api-keys': { id: 'listApiKeys', summary: 'List API keys' },
  'POST /v1/api-keys': {
    id: 'createApiKey',
    summary: 'Create an API key',
    requestExample: { name: 'CI deploys', access_mode: 'custom', scopes: ['endpoints:read', 'requests:read'], expires_at: '2027-01-01T00:00:00.000Z' },
    responseExample: EX.CREATE_API_KEY,
  },
  'PATCH /v1/api-keys/{id}': { id: 'updateApiKey', summary: "Change an API key's access", requestExample: { access_mode: 'custom', scopes: ['requests:read'] } },
  'DELETE /v1/api-keys/{id}': { id: 'revokeApiKey', summary: 'Revoke an API key' },
  'GET /v1/audit-log': { id: 'listAuditLog', summary: "List the organization's audit log", responseExample: EX.LIST_AUDIT_LOG },

  'GET /v1/members': { id: 'listMembers', summary: 'List members' },
  'POST /v1/members': { id: 'inviteMember', summary: 'Invite a member', requestExample: { email: 'ada@example.com', role: 'developer' } },
  'GET /v1/members/{id}': { id: 'getMember', summary: 'Get a member' },
  'PATCH /v1/members/{id}': { id: 'updateMember', summary: "Change a member's role or deactivate them", requestExample: { role: 'viewer' } },

  'GET /v1/endpoints': { id: 'listEndpoints', summary: 'List endpoints' },
  'POST /v1/endpoints': {
    id: 'createEndpoint',
    summary: 'Create an endpoint',
    requestExample: { name: 'stripe-prod', description: 'Stripe live events', forward_url: 'https://api.example.com/webhooks/stripe' },
  },
  'GET /v1/endpoints/{id}': { id: 'getEndpoint', summary: 'Get an endpoint' },
  'PATCH /v1/endpoints/{id}': { id: 'updateEndpoint', summary: 'Update an endpoint', requestExample: { paused: true } },
  'DELETE /v1/endpoints/{id}': { id: 'deleteEndpoint', summary: 'Delete an endpoint and its captures' },

  'GET /v1/endpoints/{id}/requests': {
    id: 'listEndpointRequests',
    summary: "List an endpoint's captured requests",
    tag: 'requests',
    responseExample: { data: { data: [EXAMPLE_CAPTURE_SUMMARY], meta: { count: 1, has_more: false, next_cursor: null } } },
  },
  'GET /v1/endpoints/{id}/requests/stream': { id: 'streamEndpointRequests', summary: "Stream an endpoint's captures live (server-sent events)", tag: 'requests' },
  'GET /v1/requests/{id}': { id: 'getRequest', summary: 'Get a captured request' },
  'GET /v1/requests/{id}/body': { id: 'getRequestBody', summary: 'Download the raw body of a captured request' },
  'POST /v1/requests/{id}/replay': { id: 'replayRequest', summary: 'Replay a captured request to its destinations', requestExample: { destination_id: UUID_A } },
  'GET /v1/requests/{id}/forwards': {
    id: 'listRequestForwards',
    summary: "List a captured request's forwards and their attempts",
    responseExample: EX.LIST_REQUEST_FORWARDS,
  },
  'POST /v1/requests/{id}/filter-test': {
    id: 'testRequestFilter',
    summary: 'Test a routing filter against a captured request',
    requestExample: { filter: { body: { type: { $startsWith: 'invoice.' } } } },
  },
  'POST /v1/requests/{id}/transform-test': {
    id: 'testTransformation',
    summary: "Run transformation code against a captured request, without sending it",
    requestExample: { code: 'function handler(request, context) {\n  return { ...request, body: { text: request.body.type } };\n}' },
  },
  'GET /v1/requests/{id}/forwards/{delivery_id}/transformed': {
    id: 'getTransformedForward',
    summary: 'Get the request a transformed forward sent',
    responseExample: {
      data: {
        delivery_id: '0193b3a0-7c1e-7d2f-9a4b-5c6d7e8f9a0b',
        attempt_number: 1,
        transformation_hash: '3f0a7c1e5b9d2a4c6e8f0b1d3a5c7e9f1b3d5a7c9e0f2b4d6a8c0e2f4b6d8a0c',
        method: 'POST',
        url: 'https://hooks.slack.com/services/T000/B000/XXXX',
        path: '/services/T000/B000/XXXX',
        query: '',
        headers: [
          ['content-type', 'application/json'],
          ['webhook-id', 'msg_0193b39f-1a2b-7c3d-8e4f-5a6b7c8d9e0f'],
        ],
        body: '{"text":"invoice.paid: 42.00 USD"}',
        body_encoding: 'utf8',
      },
    },
  },

  'GET /v1/destinations': { id: 'listDestinations', summary: 'List destinations', responseExample: EX.LIST_DESTINATIONS },
  'POST /v1/destinations': {
    id: 'createDestination',
    summary: 'Create a destination',
    requestExample: { name: 'Staging API', url: 'https://staging.example.com/webhooks', endpoint_id: UUID_A, retry_enabled: true },
  },
  'GET /v1/destinations/{id}': { id: 'getDestination', summary: 'Get a destination' },
  'PATCH /v1/destinations/{id}': { id: 'updateDestination', summary: 'Update a destination', requestExample: { url: 'https://staging.example.com/hooks/v2' } },
  'DELETE /v1/destinations/{id}': { id: 'deleteDestination', summary: 'Delete a destination' },
  'GET /v1/endpoints/{id}/destinations': { id: 'listEndpointDestinations', summary: "List an endpoint's destinations", tag: 'destinations' },
  'POST /v1/endpoints/{id}/destinations': {
    id: 'attachDestination',
    summary: 'Attach a reusable destination to an endpoint',
    tag: 'destinations',
    requestExample: { destination_id: UUID_B, retry_enabled: true },
  },
  'PATCH /v1/endpoints/{id}/destinations/{destination_id}': {
    id: 'updateEndpointDestination',
    summary: "Change how an endpoint forwards to one of its destinations",
    tag: 'destinations',
    requestExample: { enabled: false },
  },
  'DELETE /v1/endpoints/{id}/destinations/{destination_id}': { id: 'detachDestination', summary: 'Detach a destination from an endpoint', tag: 'destinations' },

  'GET /v1/incidents': { id: 'listIncidents', summary: 'List incidents' },
  'GET /v1/incidents/sample': { id: 'getIncidentSample', summary: 'What an incident.opened event delivers' },
  'GET /v1/incidents/recent': { id: 'listRecentIncidents', summary: 'List the newest incidents of any status' },
  'GET /v1/incidents/{id}': { id: 'getIncident', summary: 'Get an incident with its failures and updates', responseExample: EX.GET_INCIDENT },
  'PATCH /v1/incidents/{id}': { id: 'updateIncident', summary: "Change an incident's status", requestExample: { status: 'investigating' } },
  'POST /v1/incidents/{id}/updates': {
    id: 'addIncidentNote',
    summary: 'Add a note to an incident',
    requestExample: { body: 'Staging was redeployed; retrying.' },
    responseExample: { data: { id: '0193a8c2-0000-7000-8000-0000000000c1', body: 'Staging was redeployed; retrying.', is_system: false, author_id: UUID_B, created_at: '2026-01-01T00:07:00.000Z' } },
  },
  'POST /v1/incidents/{id}/replay': {
    id: 'replayIncident',
    summary: "Replay an incident's failed deliveries, paced",
    requestExample: { requests_per_minute: 60 },
    responseExample: { data: { replay_batch_id: '0193a8c2-0000-7000-8000-0000000000b1', queued_count: 12, requests_per_minute: 60 } },
  },

  'GET /v1/replay-batches/{id}': { id: 'getReplayBatch', summary: 'Get a replay batch and its progress' },
  'POST /v1/replay-batches/{id}/cancel': { id: 'cancelReplayBatch', summary: 'Cancel a replay batch' },
  'POST /v1/replay-batches/{id}/pause': { id: 'pauseReplayBatch', summary: 'Pause a replay batch' },
  'POST /v1/replay-batches/{id}/resume': { id: 'resumeReplayBatch', summary: 'Resume a paused replay batch' },

  'GET /v1/agents': { id: 'listAgents', summary: 'List agents' },
  'POST /v1/agents': {
    id: 'createAgent',
    summary: 'Register an agent and get its token',
    requestExample: { name: 'laptop-ada', environment: 'development' },
    responseExample: {
      data: {
        id: '0193a8c2-0000-7000-8000-0000000000a7',
        name: 'laptop-ada',
        environment: 'development',
        status: 'disconnected',
        connected_at: null,
        last_seen_at: null,
        agent_version: null,
        hostname: null,
        node: null,
        revoked_at: null,
        created_at: '2026-01-01T00:00:00.000Z',
        updated_at: '2026-01-01T00:00:00.000Z',
        token: 'wr_agent_3q2x9Zk1Hc5mP8vT0bN4yL6wD7fG2sJq8WmE0xR4tY7',
        command: 'npx weir agent --server https://weir.example.com --token wr_agent_3q2x9Zk1Hc5mP8vT0bN4yL6wD7fG2sJq8WmE0xR4tY7',
        gateway_path: '/agent/v1/connect',
      },
    },
  },
  'GET /v1/agents/{id}': { id: 'getAgent', summary: 'Get an agent' },
  'PATCH /v1/agents/{id}': { id: 'updateAgent', summary: 'Rename an agent or change its environment', requestExample: { name: 'ci-runner' } },
  'DELETE /v1/agents/{id}': { id: 'deleteAgent', summary: 'Delete an agent' },
  'POST /v1/agents/{id}/token': { id: 'rotateAgentToken', summary: 'Issue a new agent token (the old one stops working)', responseExample: EX.ROTATE_AGENT_TOKEN },

  'GET /v1/subscriptions': { id: 'listSubscriptions', summary: 'List event subscriptions' },
  'POST /v1/subscriptions': {
    id: 'createSubscription',
    summary: 'Subscribe a URL to events',
    requestExample: { target_url: 'https://hooks.zapier.com/hooks/standard/123/abc', event_types: ['request.captured', 'incident.opened'], endpoint_id: null },
  },
  'GET /v1/subscriptions/sample/{endpointId}': { id: 'getCaptureEventSample', summary: 'What a request.captured event delivers for an endpoint' },
  'GET /v1/subscriptions/{id}': { id: 'getSubscription', summary: 'Get an event subscription' },
  'DELETE /v1/subscriptions/{id}': { id: 'deleteSubscription', summary: 'Unsubscribe' },
  'GET /v1/subscriptions/{id}/events': { id: 'listSubscriptionEvents', summary: 'List the events sent to a subscription', responseExample: EX.LIST_SUBSCRIPTION_EVENTS },
  'POST /v1/subscriptions/{id}/rotate-secret': { id: 'rotateSubscriptionSecret', summary: "Rotate a subscription's signing secret" },

  'GET /v1/usage': { id: 'getUsage', summary: "The organization's usage against its plan" },

  'POST /admin/v1/organizations': { id: 'adminCreateOrganization', summary: 'Create an organization', requestExample: { name: 'Acme', plan: 'pro' } },
  'GET /admin/v1/organizations': { id: 'adminListOrganizations', summary: 'List organizations' },
  'GET /admin/v1/organizations/{id}': { id: 'adminGetOrganization', summary: 'Get an organization', responseExample: EX.ADMIN_GET_ORGANIZATION },
  'PATCH /admin/v1/organizations/{id}': { id: 'adminUpdateOrganization', summary: "Change an organization's plan or name", requestExample: { plan: 'business' } },
  'GET /admin/v1/organizations/{id}/audit-log': { id: 'adminListAuditLog', summary: "List an organization's audit log", responseExample: EX.ADMIN_LIST_AUDIT_LOG },
  'POST /admin/v1/organizations/{id}/members': { id: 'adminCreateMember', summary: 'Add a member to an organization', requestExample: { email: 'owner@acme.example', role: 'super_admin' } },
  'GET /admin/v1/organizations/{id}/members': { id: 'adminListMembers', summary: "List an organization's members" },
  'PATCH /admin/v1/members/{id}': { id: 'adminUpdateMember', summary: "Change a member's role or deactivate them", requestExample: { active: false } },
  'POST /admin/v1/members/{id}/api-keys': {
    id: 'adminCreateApiKey',
    summary: 'Mint an API key for a member',
    requestExample: { name: 'bootstrap' },
    responseExample: EX.ADMIN_CREATE_API_KEY,
  },
  'GET /admin/v1/members/{id}/api-keys': { id: 'adminListApiKeys', summary: "List a member's API keys" },
  'DELETE /admin/v1/api-keys/{id}': { id: 'adminRevokeApiKey', summary: 'Revoke an API key' },
  'POST /admin/v1/organizations/{id}/agents': {
    id: 'adminCreateAgent',
    summary: 'Register an agent for an organization',
    requestExample: { name: 'edge-1', environment: 'production' },
    responseExample: EX.ADMIN_CREATE_AGENT,
  },
};

/** Descriptions of the tags, in the order a reference page shows them. */
export const TAGS: ReadonlyArray<{ name: string; description: string }> = [
  { name: 'account', description: 'The calling key and the health of the API.' },
  { name: 'endpoints', description: 'Capture URLs (`/h/{slug}`) and their settings.' },
  { name: 'requests', description: 'Captured requests: list, read, stream live, replay.' },
  { name: 'destinations', description: 'Where captures are forwarded: HTTPS URLs and agents.' },
  { name: 'incidents', description: 'Correlated forwarding failures and their replay.' },
  { name: 'replay-batches', description: 'Paced replays started from an incident.' },
  { name: 'agents', description: 'Agents that forward captures to private networks and laptops.' },
  { name: 'subscriptions', description: 'Signed event deliveries to your URLs (see the `webhooks` section).' },
  { name: 'members', description: "The organization's members and their roles." },
  { name: 'api-keys', description: 'API keys: full access or custom scopes.' },
  { name: 'audit-log', description: 'Who did what in the organization.' },
  { name: 'usage', description: 'Usage against the plan.' },
  { name: 'operator', description: 'The operator API (`WEIR_ADMIN_TOKEN`), for the people running the installation.' },
];

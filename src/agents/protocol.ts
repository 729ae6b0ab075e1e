/**
 * The agent link's wire format, shared by the gateway (server) and the
 * agent CLI (client). Every message is one binary WebSocket frame:
 *
 *   [u32 big-endian length of the header][header: UTF-8 JSON][body bytes]
 *
 * so a webhook's body travels as its exact bytes, never re-encoded. The
 * path below is the HTTP path the agent dials (same port as the API).
 */
export const AGENT_PATH = '/agent/v1/connect';

/** Protocol version, sent by the agent; the gateway refuses versions it does not speak. */
export const PROTOCOL_VERSION = 1;

/** Server pings and agent heartbeats this often; either side gives up on a link silent for LINK_TIMEOUT_MS. */
export const HEARTBEAT_MS = 3_000;
export const LINK_TIMEOUT_MS = 10_000;

/** Room for a delivery's headers and JSON framing on top of the body (captured headers are capped far below this). */
export const FRAME_OVERHEAD_BYTES = 256 * 1024;

/**
 * The agent's body limit when it does not say (agents before the
 * x-weir-agent-max-frame header; the agent CLI's WEIR_MAX_BODY_BYTES default).
 */
export const DEFAULT_AGENT_MAX_BODY_BYTES = 10 * 1024 * 1024;
/**
 * Sent by the agent at the handshake: the largest frame it accepts (its
 * WebSocket maxPayload). A larger frame would make it drop the link, and the
 * delivery would come back on every reconnect: the gateway refuses such a
 * delivery instead (src/agents/link.ts).
 */
export const MAX_FRAME_HEADER = 'x-weir-agent-max-frame';

/** Close codes: the token no longer works (revoked or re-issued) and a newer connection took the agent over. Both stop the agent. */
export const CLOSE_TOKEN_INVALID = 4001;
export const CLOSE_REPLACED = 4002;
export const CLOSE_PROTOCOL_ERROR = 4003;

export interface TargetInfo {
  destination: string;
  endpoint: string;
  port: number;
  path: string;
  environment: 'production' | 'development';
}

export interface HelloMessage {
  type: 'hello';
  agent_id: string;
  agent_name: string;
  environment: 'production' | 'development';
  node: string;
  forward_timeout_ms: number;
  max_in_flight: number;
  targets: TargetInfo[];
}

/** One forward to perform: the agent builds the URL itself from port and path, on loopback only. */
export interface DeliverMessage {
  type: 'deliver';
  id: string;
  attempt: number;
  request_id: string;
  webhook_id: string;
  /** Forwards of one destination are performed one at a time, in the order received. */
  destination_id: string | null;
  port: number;
  /** Path and query, starting with '/'. */
  path: string;
  method: string;
  /** Flat [name, value, name, value, ...]: order, case and duplicates kept. */
  headers: string[];
}

export interface ResultMessage {
  type: 'result';
  id: string;
  started_at: string;
  duration_ms: number;
  status_code?: number;
  headers?: Array<[string, string]>;
  truncated?: boolean;
  error_class?: string;
  error_message?: string;
}

export interface HeartbeatMessage {
  type: 'heartbeat';
}

export type ServerMessage = HelloMessage | DeliverMessage;
export type AgentMessage = ResultMessage | HeartbeatMessage;

export function encodeFrame(header: object, body: Buffer = Buffer.alloc(0)): Buffer {
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const prefix = Buffer.alloc(4);
  prefix.writeUInt32BE(json.length, 0);
  return Buffer.concat([prefix, json, body]);
}

/** Splits a frame; throws on anything malformed (the caller closes the link with CLOSE_PROTOCOL_ERROR). */
export function decodeFrame<T extends { type: string }>(data: Buffer): { header: T; body: Buffer } {
  if (data.length < 4) throw new Error('frame shorter than its length prefix');
  const n = data.readUInt32BE(0);
  if (n > data.length - 4) throw new Error('frame header longer than the frame');
  const header = JSON.parse(data.subarray(4, 4 + n).toString('utf8')) as T;
  if (!header || typeof header !== 'object' || typeof header.type !== 'string') throw new Error('frame header has no type');
  return { header, body: data.subarray(4 + n) };
}

/** Normalises what a `ws` message event hands over into one Buffer. */
export function frameBytes(data: Buffer | ArrayBuffer | Buffer[]): Buffer {
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.isBuffer(data) ? data : Buffer.from(data);
}

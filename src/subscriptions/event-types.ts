/**
 * The event types a subscription can ask for. docs/subscriptions.md
 * describes each payload with its JSON Schema.
 */
export const EVENT_TYPES = [
  'request.captured',
  'request.forward_failed',
  'incident.opened',
  'incident.updated',
  'incident.resolved',
  'replay.completed',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Event types an endpoint_id narrows; the others are the organization's whatever the subscription's endpoint. */
export const ENDPOINT_EVENTS: readonly EventType[] = ['request.captured', 'request.forward_failed'];

export function isEventType(v: unknown): v is EventType {
  return typeof v === 'string' && (EVENT_TYPES as readonly string[]).includes(v);
}

/** The envelope every event body has (Standard Webhooks' recommended shape plus the event id). */
export function eventBody(id: string, type: EventType, dataJson: string, at = new Date()): string {
  // the same bytes as JSON.stringify({ id, type, timestamp, data }), with data serialised once by the caller
  return `{"id":"evt_${id}","type":${JSON.stringify(type)},"timestamp":"${at.toISOString()}","data":${dataJson}}`;
}

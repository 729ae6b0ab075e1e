import { answer, arrayOf, dataOf, int, nullableStr, num, object, openObject, str, strings, uuid } from '../http/responses.ts';

/** A request in the handler's shape (docs/transformations.md). */
const handlerRequest = object(
  {
    method: str,
    path: str,
    query: str,
    headers: openObject('Lower-case names to string values; repeated headers joined with ", ".'),
    body: { description: 'Parsed JSON for a JSON content type, else the UTF-8 text, else null (see body_base64).' },
    body_base64: { type: 'string', description: 'Only when the body is not UTF-8 text.' },
  },
  { optional: ['body_base64'] },
);

const testResult = object(
  {
    request: { anyOf: [handlerRequest, { type: 'null' }], description: 'What would be sent (Weir-owned headers applied), or null: the handler skips this request.' },
    logs: { ...strings, description: 'console.log lines, at most 50 of at most 1000 characters.' },
    duration_ms: num,
  },
  {
    example: {
      request: { method: 'POST', path: '', query: '', headers: { 'content-type': 'application/json', 'webhook-id': 'msg_0193a8c2-0000-7000-8000-0000000000c1' }, body: { text: 'Payment of 20.00 USD succeeded' } },
      logs: ['event charge.succeeded'],
      duration_ms: 0.42,
    },
  },
);

const sentRequest = object({
  delivery_id: uuid,
  attempt_number: int,
  transformation_hash: str,
  method: str,
  url: nullableStr,
  path: str,
  query: str,
  headers: { ...arrayOf({ type: 'array', items: str, minItems: 2, maxItems: 2 }), description: '[name, value] pairs as sent, Weir-owned headers included.' },
  body: { type: 'string', description: 'UTF-8 text, or base64 when the bytes are not valid UTF-8 (body_encoding).' },
  body_encoding: { type: 'string', enum: ['utf8', 'base64'] },
});

export const transformationResponses = {
  tested: answer(200, "The handler's answer for this capture, its console lines and how long it ran.", dataOf(testResult)),
  sent: answer(200, 'The request as its newest transformed attempt sent it.', dataOf(sentRequest)),
};

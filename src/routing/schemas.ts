/**
 * JSON schemas of routing (docs/routing.md): a destination's `filter` and
 * an endpoint's `deduplication`. Shapes only: the rules with messages that
 * name the offending path are filter.ts's and dedup.ts's.
 */

/** A forward destination's `filter`, as written and as read. */
export const filterSetting = {
  type: ['object', 'null'],
  description:
    'Which captures this destination receives (docs/routing.md): null forwards everything; else any of `headers`, `path`, `query`, `body` with plain values (equality), nested objects (subset) and the operators $eq $neq $gt $gte $lt $lte $in $nin $startsWith $endsWith $contains $exist $and $or $not. At most 64 KB and 10 levels deep.',
  additionalProperties: true,
  examples: [{ body: { type: { $startsWith: 'invoice.' } } }],
} as const;

/** An endpoint's `deduplication`, as written and as read. */
export const deduplicationSetting = {
  type: ['object', 'null'],
  description:
    'Duplicate suppression (docs/routing.md): null (none) or `{window_seconds: 1-3600, key}` where key is "body" (the exact bytes), `{"header": "<name>"}` or `{"body_path": "<dotted.path>"}`. A duplicate within the window is stored with duplicate_of and acknowledged, not forwarded.',
  properties: {
    window_seconds: { type: 'integer' },
    key: {
      anyOf: [
        { type: 'string', enum: ['body'] },
        { type: 'object', additionalProperties: false, required: ['header'], properties: { header: { type: 'string' } } },
        { type: 'object', additionalProperties: false, required: ['body_path'], properties: { body_path: { type: 'string' } } },
      ],
    },
  },
  examples: [{ window_seconds: 300, key: { body_path: 'id' } }],
} as const;

/** The shape of every paged list: `{data: {data: [...], meta: {count, has_more, next_cursor}}}`. */
export interface Page<T> {
  data: T[];
  meta: { count: number; has_more: boolean; next_cursor: string | null };
}

export const DEFAULT_PAGE_SIZE = 25;
export const MAX_PAGE_SIZE = 100;

/** Query-string schema shared by paged lists: `limit` 1-100 (default 25), `before` an id cursor. */
export const pageQuerySchema = {
  limit: { type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE },
  before: { type: 'string', pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$' },
} as const;

/**
 * Builds a page from `limit + 1` rows fetched newest first: the extra row
 * only tells whether there is more. `count` is the number of items in this
 * page; `next_cursor` is the last item's id, to pass as `before`.
 */
export function toPage<T extends { id: string }, U = T>(rows: T[], limit: number, present: (row: T) => U = (r) => r as unknown as U): Page<U> {
  const hasMore = rows.length > limit;
  const items = hasMore ? rows.slice(0, limit) : rows;
  return {
    data: items.map(present),
    meta: { count: items.length, has_more: hasMore, next_cursor: hasMore ? items[items.length - 1].id : null },
  };
}

/**
 * The one catalogue of error codes a client can see. Each code has one HTTP
 * status; the error handler in app.ts writes `{error: {code, message}}`.
 */
export const ERROR_STATUS = {
  bad_request: 400,
  missing_field: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  headers_too_large: 431,
  not_implemented: 501,
  internal_error: 500,
  service_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS | 'plan_limit';

export class ApiError extends Error {
  constructor(
    readonly code: ErrorCode,
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

const make = (code: keyof typeof ERROR_STATUS) => (message: string) => new ApiError(code, ERROR_STATUS[code], message);

export const badRequest = make('bad_request');
export const missingField = make('missing_field');
export const unauthorized = (message = 'A valid API key is required: send Authorization: Bearer <API_KEY>.') =>
  new ApiError('unauthorized', 401, message);
export const forbidden = make('forbidden');
export const notFound = make('not_found');
export const conflict = make('conflict');
export const notImplemented = make('not_implemented');
export const serviceUnavailable = make('service_unavailable');
/**
 * plan_limit is the one code with two statuses, as the specification fixes:
 * 429 when creating an endpoint beyond the plan, 403 for everything else.
 */
export const planLimit = (message: string, status: 403 | 429 = 403) => new ApiError('plan_limit', status, message);

export interface ErrorBody {
  error: { code: string; message: string };
}

export function errorBody(code: string, message: string): ErrorBody {
  return { error: { code, message } };
}

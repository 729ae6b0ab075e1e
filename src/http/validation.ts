import Ajv, { type ErrorObject } from 'ajv';
import type { FastifySchemaCompiler } from 'fastify';

// Bodies are validated strictly: no type coercion ("5" is not 5) and no
// silently dropped unknown fields, so a typo in a field name is an error
// rather than a no-op. Query strings and path params are text by nature and
// are coerced ("?limit=10").
const bodyAjv = new Ajv.default({ coerceTypes: false, removeAdditional: false, useDefaults: false, allErrors: false, strict: false });
const textAjv = new Ajv.default({ coerceTypes: true, removeAdditional: false, useDefaults: true, allErrors: false, strict: false });

export const validatorCompiler: FastifySchemaCompiler<Record<string, unknown>> = ({ schema, httpPart }) => {
  const ajv = httpPart === 'body' ? bodyAjv : textAjv;
  return ajv.compile(schema) as ReturnType<FastifySchemaCompiler<Record<string, unknown>>>;
};

const PART_NAMES: Record<string, string> = { body: 'body', querystring: 'query parameter', params: 'path parameter', headers: 'header' };

/** One readable sentence for the first validation error, naming the field. */
export function describeValidationError(errors: ErrorObject[], context: string): string {
  const sentence = describe(errors[0], context);
  return sentence.charAt(0).toUpperCase() + sentence.slice(1);
}

function describe(e: ErrorObject | undefined, context: string): string {
  if (!e) return 'The request is invalid.';
  const where = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
  const part = PART_NAMES[context] ?? context;
  const field = (name: string) => (context === 'body' ? `field "${name}"` : `${part} "${name}"`);
  const subject = where ? field(where) : context === 'body' ? 'the JSON body' : `the ${part}s`;
  switch (e.keyword) {
    case 'required':
      return `${field(where ? `${where}.${e.params.missingProperty}` : String(e.params.missingProperty))} is required.`;
    case 'additionalProperties':
      return `${field(where ? `${where}.${e.params.additionalProperty}` : String(e.params.additionalProperty))} is not allowed here.`;
    case 'type':
      return `${subject} must be ${e.params.type === 'object' && !where && context === 'body' ? 'a JSON object' : `of type ${String(e.params.type).replace(',', ' or ')}`}.`;
    case 'enum':
      return `${subject} must be one of: ${(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}.`;
    case 'minLength':
      return `${subject} must be at least ${e.params.limit} character${e.params.limit === 1 ? '' : 's'} long.`;
    case 'maxLength':
      return `${subject} must be at most ${e.params.limit} characters long.`;
    case 'minimum':
    case 'maximum':
      return `${subject} must be ${e.keyword === 'minimum' ? '>=' : '<='} ${e.params.limit}.`;
    case 'format':
      return `${subject} must be a valid ${e.params.format}.`;
    case 'pattern':
      return `${subject} has an invalid format.`;
    default:
      return `${subject} ${e.message ?? 'is invalid'}.`;
  }
}

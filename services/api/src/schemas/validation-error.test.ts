import Joi from 'joi';
import { describe, expect, it } from 'vitest';
import { issuesFromJoi, type Source, type ValidationIssue } from './validation-error.js';
import { RequestValidationError } from '@slipway/domain';

/** Validates as the router does (every problem, no label quoting) and maps the result. */
function issues(schema: Joi.Schema, value: unknown, source: Source = 'body'): ValidationIssue[] {
  const { error } = schema.validate(value, { abortEarly: false, convert: true, errors: { wrap: { label: false } } });
  if (!error) throw new Error('expected the value to be invalid');
  return issuesFromJoi(error, source, schema);
}

describe('issuesFromJoi', () => {
  it('maps a missing field to missing / Field required, located under the source', () => {
    expect(issues(Joi.object({ name: Joi.string().required() }), {})).toEqual([
      { loc: ['body', 'name'], msg: 'Field required', type: 'missing' },
    ]);
  });

  it('maps a missing body to loc ["body"]', () => {
    expect(issues(Joi.object().required(), undefined)).toEqual([
      { loc: ['body'], msg: 'Field required', type: 'missing' },
    ]);
  });

  it('maps a non-string to string_type', () => {
    expect(issues(Joi.object({ version: Joi.string() }), { version: 5 })).toEqual([
      { loc: ['body', 'version'], msg: 'Input should be a valid string', type: 'string_type' },
    ]);
  });

  it('tells int_parsing from float_parsing by the schema at the path', () => {
    const schema = Joi.object({ limit: Joi.number().integer(), ratio: Joi.number() });
    expect(issues(schema, { limit: 'abc', ratio: 'abc' }, 'query')).toEqual([
      {
        loc: ['query', 'limit'],
        msg: 'Input should be a valid integer, unable to parse string as an integer',
        type: 'int_parsing',
      },
      {
        loc: ['query', 'ratio'],
        msg: 'Input should be a valid number, unable to parse string as a number',
        type: 'float_parsing',
      },
    ]);
  });

  it('finds the integer rule in nested objects', () => {
    const schema = Joi.object({ page: Joi.object({ size: Joi.number().integer().min(1) }) });
    expect(issues(schema, { page: { size: 'x' } })).toEqual([
      expect.objectContaining({ loc: ['body', 'page', 'size'], type: 'int_parsing' }),
    ]);
  });

  it('finds the integer rule for array items', () => {
    const schema = Joi.object({
      ports: Joi.array().items(Joi.number().integer()),
      weights: Joi.array().items(Joi.number()),
    });
    expect(issues(schema, { ports: [80, 'http'], weights: ['heavy'] })).toEqual([
      expect.objectContaining({ loc: ['body', 'ports', 1], type: 'int_parsing' }),
      expect.objectContaining({ loc: ['body', 'weights', 0], type: 'float_parsing' }),
    ]);
  });

  it('maps a fractional integer to int_from_float', () => {
    expect(issues(Joi.object({ n: Joi.number().integer() }), { n: 1.5 })[0]).toMatchObject({ type: 'int_from_float' });
  });

  it('maps bounds with their limits', () => {
    const schema = Joi.object({ limit: Joi.number().integer().min(1).max(100), s: Joi.string().min(3).max(5) });
    expect(issues(schema, { limit: 0, s: 'ab' })).toEqual([
      { loc: ['body', 'limit'], msg: 'Input should be greater than or equal to 1', type: 'greater_than_equal' },
      { loc: ['body', 's'], msg: 'String should have at least 3 characters', type: 'string_too_short' },
    ]);
    expect(issues(schema, { limit: 101, s: 'abcdef' }).map((i) => [i.type, i.msg])).toEqual([
      ['less_than_equal', 'Input should be less than or equal to 100'],
      ['string_too_long', 'String should have at most 5 characters'],
    ]);
  });

  it('maps a malformed UUID to uuid_parsing', () => {
    expect(issues(Joi.object({ listener_id: Joi.string().guid() }), { listener_id: 'not-a-uuid' }, 'path')).toEqual([
      { loc: ['path', 'listener_id'], msg: 'Input should be a valid UUID', type: 'uuid_parsing' },
    ]);
  });

  it('lists the allowed values of an enum the way pydantic does', () => {
    expect(issues(Joi.string().valid('a', 'b'), 'c')).toEqual([
      { loc: ['body'], msg: "Input should be 'a' or 'b'", type: 'enum' },
    ]);
    expect(issues(Joi.string().valid('a', 'b', 'c'), 'd')[0]!.msg).toBe("Input should be 'a', 'b' or 'c'");
    expect(issues(Joi.string().valid('k8s').allow(null), 'ecs')[0]!.msg).toBe("Input should be 'k8s'");
    expect(issues(Joi.number().valid(1, 2), 3)[0]!.msg).toBe('Input should be 1 or 2');
  });

  it('maps a pattern mismatch with the pattern and no regex slashes', () => {
    expect(issues(Joi.string().pattern(/^[a-z]+$/), 'A1')).toEqual([
      { loc: ['body'], msg: "String should match pattern '^[a-z]+$'", type: 'string_pattern_mismatch' },
    ]);
  });

  it('locates array items by index', () => {
    const schema = Joi.object({ tags: Joi.array().items(Joi.string().max(3)) });
    expect(issues(schema, { tags: ['ok', 'too long', 'no', 'also too long'] })).toEqual([
      expect.objectContaining({ loc: ['body', 'tags', 1], type: 'string_too_long' }),
      expect.objectContaining({ loc: ['body', 'tags', 3], type: 'string_too_long' }),
    ]);
  });

  it("falls back to value_error with joi's message for unmapped codes", () => {
    const [issue] = issues(Joi.object({ email: Joi.string().email() }), { email: 'nope' });
    expect(issue).toEqual({
      loc: ['body', 'email'],
      msg: 'Value error, email must be a valid email',
      type: 'value_error',
    });
  });

  it('reports every problem, in order', () => {
    const schema = Joi.object({ a: Joi.string().required(), b: Joi.boolean(), c: Joi.array(), d: Joi.object() });
    expect(issues(schema, { b: 'maybe', c: 'x', d: 1 }).map((i) => [i.loc.join('.'), i.type])).toEqual([
      ['body.a', 'missing'],
      ['body.b', 'bool_parsing'],
      ['body.c', 'list_type'],
      ['body.d', 'dict_type'],
    ]);
  });

  it('works without a schema (integers are then not recognised)', () => {
    const { error } = Joi.object({ n: Joi.number().integer() }).validate({ n: 'x' });
    expect(issuesFromJoi(error!, 'query')).toEqual([
      expect.objectContaining({ loc: ['query', 'n'], type: 'float_parsing' }),
    ]);
  });
});

describe('RequestValidationError', () => {
  it('is a 422 carrying the issues', () => {
    const list: ValidationIssue[] = [{ loc: ['body'], msg: 'Field required', type: 'missing' }];
    const err = new RequestValidationError(list);
    expect(err).toBeInstanceOf(Error);
    expect(err.status).toBe(422);
    expect(err.issues).toEqual(list);
    expect(err.name).toBe('RequestValidationError');
  });
});

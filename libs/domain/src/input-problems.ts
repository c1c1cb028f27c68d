/**
 * Problems with a request's input, in the shape the api's 422 lists them (docs/api.md, Errors):
 * `loc` from the part of the request (`body`) down to the field, with pydantic's `msg` and
 * `type`, so clients written against FastAPI control planes read them as they read ours.
 * Validators return every problem they find; none means the input is valid.
 */
export interface InputProblem {
  loc: Array<string | number>;
  msg: string;
  type: string;
}

/**
 * A 422 lists at most this many problems. Every problem of a request is reported at once, but a
 * body of thousands of wrong array items would otherwise get an answer sixty times its size
 * (two problems of ~150 bytes per item).
 */
export const MAX_REPORTED_ISSUES = 100;

/** The 422 carrying every problem of a request at once (docs/api.md, Errors); thrown by validators anywhere. */
export class RequestValidationError extends Error {
  readonly status = 422;
  readonly issues: InputProblem[];
  constructor(issues: InputProblem[]) {
    super('Request validation failed');
    this.name = 'RequestValidationError';
    this.issues = issues.slice(0, MAX_REPORTED_ISSUES);
  }
}

/** The 422 listing `problems`, when there are any (what a domain validator found). */
export function refuseInvalid(problems: readonly InputProblem[]): void {
  if (problems.length) throw new RequestValidationError([...problems]);
}

/** A problem of the request body at `loc` (below `body`). */
export const bodyProblem = (loc: ReadonlyArray<string | number>, type: string, msg: string): InputProblem => ({
  loc: ['body', ...loc],
  msg,
  type,
});

/** pydantic's `value_error`: a rule of the field's own refused the value, said in `why`. */
export const valueError = (loc: ReadonlyArray<string | number>, why: string): InputProblem =>
  bodyProblem(loc, 'value_error', `Value error, ${why}`);

/** Where a deployment's resource_spec sits in a create or PATCH body. */
export const RESOURCE_SPEC_LOC = ['source_config', 'resource_spec'] as const;

/** A problem of the resource_spec field at `path` (inside the spec). */
export const resourceSpecProblem = (path: ReadonlyArray<string | number>, type: string, msg: string): InputProblem =>
  bodyProblem([...RESOURCE_SPEC_LOC, ...path], type, msg);

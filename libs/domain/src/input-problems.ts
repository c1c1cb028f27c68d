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

/** A problem of the request body at `loc` (below `body`). */
export const bodyProblem = (loc: ReadonlyArray<string | number>, type: string, msg: string): InputProblem => ({ loc: ['body', ...loc], msg, type });

/** pydantic's `value_error`: a rule of the field's own refused the value, said in `why`. */
export const valueError = (loc: ReadonlyArray<string | number>, why: string): InputProblem => bodyProblem(loc, 'value_error', `Value error, ${why}`);

/** Where a deployment's resource_spec sits in a create or PATCH body. */
export const RESOURCE_SPEC_LOC = ['source_config', 'resource_spec'] as const;

/** A problem of the resource_spec field at `path` (inside the spec). */
export const resourceSpecProblem = (path: ReadonlyArray<string | number>, type: string, msg: string): InputProblem =>
  bodyProblem([...RESOURCE_SPEC_LOC, ...path], type, msg);

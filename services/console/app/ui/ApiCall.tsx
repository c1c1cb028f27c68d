/**
 * What every action of the console has in common: it runs one or more API calls, shows each as
 * a `curl` command that does the same (the key as `$SLIPWAY_API_KEY`, secret values never), and
 * shows the API's refusal in words, each 422 problem next to the field it names.
 */
import { useCallback, useId, useRef, useState, type ReactNode } from 'react';
import { ApiError, type FieldIssue } from '../api/client';
import { Dialog, ErrorText, useApi } from './common';

export interface ApiCall {
  method: string;
  /** Absolute: the API's origin and base path, then the route. */
  url: string;
  /** Whether the key goes with it (not for a signed upload URL). */
  authenticated: boolean;
  tenantId: string | null;
  /** JSON body, secret values already replaced. */
  body?: unknown;
  /** A file sent as it is (an upload), by name. */
  file?: string;
}

const quote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

/** The call as a shell command; `$SLIPWAY_API_KEY` stands for the key, expanded by the shell. */
export function curlOf(call: ApiCall): string {
  const lines = [`curl -X ${call.method} ${quote(call.url)}`];
  if (call.authenticated) {
    lines.push(`-H "X-Api-Key: $SLIPWAY_API_KEY"`);
    if (call.tenantId) lines.push(`-H ${quote(`X-Tenant-Id: ${call.tenantId}`)}`);
  }
  if (call.body !== undefined) {
    lines.push(`-H 'Content-Type: application/json'`);
    lines.push(`-d ${quote(JSON.stringify(call.body))}`);
  }
  if (call.file) lines.push(`--data-binary @${call.file}`);
  return lines.join(' \\\n  ');
}

/** An integration's credentials (`config.token`, `config.private_key`): never shown in a curl command. */
const WRITE_ONLY = ['token', 'private_key'];

/**
 * A body as the curl command shows it: a secret's value (any `secrets` list, at any depth)
 * and a credential become placeholders naming them. `********`, which keeps the stored value, stays.
 */
export function withoutSecretValues(body: unknown): unknown {
  if (Array.isArray(body)) return body.map(withoutSecretValues);
  if (!body || typeof body !== 'object') return body;
  return Object.fromEntries(
    Object.entries(body).map(([k, v]) => [
      k,
      k === 'secrets' && Array.isArray(v)
        ? v.map((s: { name?: string; value?: string }) =>
            s.value === '********' ? s : { ...s, value: `<value of ${s.name ?? 'the secret'}>` },
          )
        : WRITE_ONLY.includes(k) && typeof v === 'string'
          ? `<your ${k}>`
          : withoutSecretValues(v),
    ]),
  );
}

export type CallFn = <T>(method: string, path: string, body?: unknown) => Promise<T>;

export interface Action {
  busy: boolean;
  error: string | null;
  issues: FieldIssue[];
  calls: ApiCall[];
  /** The calls of the last `perform` so far, read now (not as of the last render). */
  recorded: () => ApiCall[];
  /** Runs `steps` (a user's one action); each `call` it makes is recorded. Resolves to its result, or null when it failed. */
  perform: <T>(steps: (call: CallFn, record: (c: ApiCall) => void) => Promise<T>) => Promise<T | null>;
  /** The 422 messages for `field` and what lies under it (`secrets` covers `secrets.0.name`). */
  issueFor: (field: string) => string | undefined;
  /** Shows an error found before any call (client-side validation). */
  fail: (error: string, issues?: FieldIssue[]) => void;
  reset: () => void;
}

export function useAction(): Action {
  const api = useApi();
  const [state, setState] = useState<{ busy: boolean; error: string | null; issues: FieldIssue[]; calls: ApiCall[] }>({
    busy: false,
    error: null,
    issues: [],
    calls: [],
  });
  const recorded = useRef<ApiCall[]>([]);
  const perform = useCallback(
    async <T,>(steps: (call: CallFn, record: (c: ApiCall) => void) => Promise<T>): Promise<T | null> => {
      setState({ busy: true, error: null, issues: [], calls: [] });
      recorded.current = [];
      const record = (c: ApiCall) => {
        recorded.current = [...recorded.current, c];
        setState((s) => ({ ...s, calls: [...s.calls, c] }));
      };
      const call: CallFn = (method, path, body) => {
        // A POST always carries a body (`{}` at least), as Api.post sends it.
        const sent = body ?? (method === 'POST' ? {} : undefined);
        record({
          method,
          url: new URL(api.base + path, location.origin).href,
          authenticated: true,
          tenantId: api.session.tenantId,
          body: sent === undefined ? undefined : withoutSecretValues(sent),
        });
        return api.request(method, path, { body: sent });
      };
      try {
        const result = await steps(call, record);
        setState((s) => ({ ...s, busy: false }));
        return result;
      } catch (err) {
        setState((s) => ({
          ...s,
          busy: false,
          error: (err as Error).message,
          issues: err instanceof ApiError ? err.issues : [],
        }));
        return null;
      }
    },
    [api],
  );
  const issueFor = (field: string) =>
    state.issues
      .filter((i) => i.field === field || i.field.startsWith(`${field}.`))
      .map((i) => i.message)
      .join('; ') || undefined;
  return {
    ...state,
    recorded: () => recorded.current,
    perform,
    issueFor,
    fail: (error, issues = []) => setState((s) => ({ ...s, error, issues, calls: [] })),
    reset: () => setState({ busy: false, error: null, issues: [], calls: [] }),
  };
}

/** A button that copies `text` to the clipboard, saying whether it could. */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [copied, setCopied] = useState<string | null>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setCopied('Copied to the clipboard.');
    } catch {
      setCopied('The browser refused the clipboard: select the text and copy it.');
    }
  };
  return (
    <>
      <button type="button" className="secondary" onClick={copy}>
        {label}
      </button>{' '}
      <span role="status">{copied}</span>
    </>
  );
}

/** One call, as curl, with a button that copies it. */
export function CallShown({ call }: { call: ApiCall }) {
  const text = curlOf(call);
  return (
    <details className="api-call">
      <summary>
        API call: <code>{call.method}</code> <code>{new URL(call.url).pathname}</code>
      </summary>
      <pre aria-label="The call as a curl command">{text}</pre>
      <CopyButton text={text} label="Copy as curl" />
    </details>
  );
}

/** The outcome of an action: its error (if any) and the calls it made. */
export function ActionOutcome({ action, children }: { action: Action; children?: ReactNode }) {
  return (
    <div className="outcome">
      <ErrorText error={action.error} />
      {!action.error && !action.busy && action.calls.length > 0 && children}
      {action.calls.map((c, i) => (
        <CallShown key={i} call={c} />
      ))}
    </div>
  );
}

type FieldProps = {
  label: string;
  /** The API's name for it (`source_config.repo_url`): 422 problems there show here. */
  name: string;
  action: Action;
  hint?: ReactNode;
};

/**
 * A labelled field with its 422 problem (or a check of the form's own) under it, tied to the
 * input by aria-describedby. `render` gets the ids to put on the input.
 */
export function Field(
  props: FieldProps & {
    render: (ids: { id: string; 'aria-describedby'?: string; 'aria-invalid'?: boolean }) => ReactNode;
  },
) {
  const id = useId();
  const problem = props.action.issueFor(props.name);
  const described = [props.hint && `${id}-hint`, problem && `${id}-error`].filter(Boolean).join(' ') || undefined;
  return (
    <div className="field">
      <label htmlFor={id}>{props.label}</label>
      {props.render({ id, 'aria-describedby': described, 'aria-invalid': problem ? true : undefined })}
      {props.hint && (
        <span id={`${id}-hint`} className="hint">
          {props.hint}
        </span>
      )}
      {problem && (
        <span id={`${id}-error`} className="field-error">
          {problem}
        </span>
      )}
    </div>
  );
}

/** A destructive action's confirmation: a modal asking the question, then the button that does it. */
export function useConfirm(): [ReactNode, (question: string, yes: string, then: () => void) => void] {
  const [asked, setAsked] = useState<{ question: string; yes: string; then: () => void } | null>(null);
  const dialog = (
    <Dialog title={asked ? `${asked.yes}?` : 'Confirm'} open={!!asked} onClose={() => setAsked(null)}>
      <p>{asked?.question}</p>
      <div className="dialog-buttons">
        <button
          type="button"
          className="danger"
          onClick={() => {
            setAsked(null);
            asked?.then();
          }}
        >
          {asked?.yes}
        </button>
        <button type="button" className="ghost" onClick={() => setAsked(null)}>
          Cancel
        </button>
      </div>
    </Dialog>
  );
  return [dialog, (question, yes, then) => setAsked({ question, yes, then })];
}

/** A Field whose input is a choice among `options` (`[value, label]`; a leading `['', '…']` for none). */
export function SelectField<V extends string>({
  value,
  options,
  onChange,
  disabled,
  ...field
}: FieldProps & {
  value: V;
  options: ReadonlyArray<readonly [V, ReactNode]>;
  onChange: (value: V) => void;
  disabled?: boolean;
}) {
  return (
    <Field
      {...field}
      render={(ids) => (
        <select {...ids} value={value} disabled={disabled} onChange={(e) => onChange(e.target.value as V)}>
          {options.map(([v, label]) => (
            <option key={v} value={v}>
              {label}
            </option>
          ))}
        </select>
      )}
    />
  );
}

import { useId } from 'react';
import type { Action } from './ApiCall';

/** A secret being edited: a stored one is kept (its value never known here) until replaced. */
export interface SecretDraft {
  name: string;
  /** The new value; empty while `stored` means "keep the stored one". */
  value: string;
  stored: boolean;
  removed: boolean;
}

export const MASK = '********';
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export const draftsOf = (secrets: Array<{ name: string }>): SecretDraft[] =>
  secrets.map((s) => ({ name: s.name, value: '', stored: true, removed: false }));

/** The `secrets` a create or PATCH sends: `********` keeps a stored value, removed ones are left out. */
export const secretsBody = (drafts: SecretDraft[]) =>
  drafts
    .filter((d) => !d.removed && d.name)
    .map((d) => ({ name: d.name, value: d.stored && !d.value ? MASK : d.value }));

/** What the form can tell before asking the API: bad or repeated names, new secrets without a value. */
export function secretProblems(drafts: SecretDraft[]): Array<{ field: string; message: string }> {
  const live = drafts.map((d, i) => ({ d, i })).filter(({ d }) => !d.removed && (d.name || d.value));
  const problems: Array<{ field: string; message: string }> = [];
  live.forEach(({ d }, at) => {
    if (!NAME.test(d.name))
      problems.push({
        field: `secrets.${at}.name`,
        message: 'A name is letters, digits and _, not starting with a digit.',
      });
    else if (live.findIndex((o) => o.d.name === d.name) !== at)
      problems.push({ field: `secrets.${at}.name`, message: `${d.name} is given twice.` });
    if (!d.stored && !d.value)
      problems.push({ field: `secrets.${at}.value`, message: `Give ${d.name || 'the secret'} a value.` });
  });
  return problems;
}

/**
 * Secret names with write-only values: a stored secret shows its name only and may be replaced
 * or removed; values typed here go to the API and are never shown again. 422 problems at
 * `secrets.<i>.…` show on the row they name (i counts the rows sent).
 */
export function SecretsEditor({
  drafts,
  onChange,
  action,
}: {
  drafts: SecretDraft[];
  onChange: (d: SecretDraft[]) => void;
  action: Action;
}) {
  const id = useId();
  const set = (i: number, patch: Partial<SecretDraft>) =>
    onChange(drafts.map((d, j) => (j === i ? { ...d, ...patch } : d)));
  let sent = -1;
  return (
    <fieldset className="secret-rows">
      <legend>Secrets (values are write-only)</legend>
      {drafts.length === 0 && <p className="note">No secrets.</p>}
      {drafts.map((d, i) => {
        if (!d.removed && (d.name || d.value)) sent++;
        const problem = d.removed ? undefined : action.issueFor(`secrets.${sent}`);
        const rowId = `${id}-${i}`;
        return (
          <div key={i} className="secret-row" data-secret={d.name}>
            {d.stored ? (
              <code id={`${rowId}-name`}>{d.name}</code>
            ) : (
              <>
                <label htmlFor={`${rowId}-name`} className="visually-hidden">
                  Secret name {i + 1}
                </label>
                <input
                  id={`${rowId}-name`}
                  placeholder="NAME"
                  value={d.name}
                  autoComplete="off"
                  aria-invalid={problem ? true : undefined}
                  onChange={(e) => set(i, { name: e.target.value })}
                />
              </>
            )}
            {d.removed ? (
              <span className="note">will be removed</span>
            ) : d.stored && !d.value ? (
              <span className="note">value kept</span>
            ) : null}
            {!d.removed && (
              <>
                <label htmlFor={`${rowId}-value`} className="visually-hidden">
                  {d.stored ? `New value of ${d.name}` : `Value of secret ${d.name || i + 1}`}
                </label>
                <input
                  id={`${rowId}-value`}
                  type="password"
                  autoComplete="new-password"
                  placeholder={d.stored ? 'new value (empty keeps it)' : 'value'}
                  value={d.value}
                  aria-invalid={problem ? true : undefined}
                  onChange={(e) => set(i, { value: e.target.value })}
                />
              </>
            )}
            <button
              type="button"
              className="secondary"
              aria-label={d.removed ? `Keep ${d.name}` : `Remove ${d.name || `secret ${i + 1}`}`}
              onClick={() =>
                d.stored ? set(i, { removed: !d.removed, value: '' }) : onChange(drafts.filter((_, j) => j !== i))
              }
            >
              {d.removed ? 'Keep' : 'Remove'}
            </button>
            {problem && <span className="field-error">{problem}</span>}
          </div>
        );
      })}
      <div>
        <button
          type="button"
          className="secondary"
          onClick={() => onChange([...drafts, { name: '', value: '', stored: false, removed: false }])}
        >
          Add a secret
        </button>
      </div>
    </fieldset>
  );
}

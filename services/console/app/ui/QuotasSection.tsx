import { useState, type FormEvent } from 'react';
import type { Envelope, Workspace } from '../api/types';
import { ActionOutcome, Field, useAction } from './ApiCall';
import { ErrorText, useApi, useLoad } from './common';

const QUOTAS: Array<[string, string]> = [
  ['deployments', 'Deployments'],
  ['min_scale', 'Minimum instances per deployment'],
  ['max_scale', 'Maximum instances per deployment'],
  ['uploads_per_day', 'Uploads per day'],
  ['upload_bytes', 'Upload size (bytes)'],
  ['log_lines_per_revision', 'Log lines per revision'],
  ['log_lines_total', 'Log lines in all'],
  ['artifacts_kept', 'Built artifacts kept per deployment'],
];

/** Quotas counted in bytes: shown in KiB / MiB / GiB, the exact number in the title. */
const BYTES = new Set(['upload_bytes']);
const UNITS = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];

/** 52428800 → "50 MiB", 1536 → "1.5 KiB", 512 → "512 bytes". */
export function formatBytes(n: number): string {
  let value = n;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  const shown =
    unit === 0 || Number.isInteger(value) ? String(value) : value.toFixed(value < 10 ? 2 : 1).replace(/\.?0+$/, '');
  return `${shown} ${UNITS[unit]}`;
}

/** A quota's value in words: bytes in human units (exact value in the title), counts as they are. */
function QuotaValue({ name, value }: { name: string; value: number | undefined }) {
  if (value == null) return <>—</>;
  if (!BYTES.has(name)) return <>{value}</>;
  return <span title={`${value.toLocaleString('en')} bytes`}>{formatBytes(value)}</span>;
}

interface Quotas {
  workspace_id: string;
  quotas: Record<string, number>;
  overrides: Record<string, number | null>;
}

/**
 * The workspace's quotas: any key reads them; only an organization admin changes them (the API
 * says so otherwise, and the form shows its answer). An empty field means the server's default.
 */
export function QuotasSection() {
  const api = useApi();
  const action = useAction();
  const quotas = useLoad(
    async (signal) => {
      const workspaceId =
        api.session.tenantId ??
        (await api.get<Envelope<Workspace>>('/v2/workspaces', { limit: 1 }, signal)).resources[0]?.id;
      if (!workspaceId) throw new Error('This key sees no workspace.');
      return api.get<Quotas>(`/v2/workspaces/${workspaceId}/quotas`, undefined, signal);
    },
    [api],
  );
  const [draft, setDraft] = useState<Record<string, string> | null>(null);
  const current = quotas.data;
  const values =
    draft ??
    Object.fromEntries(QUOTAS.map(([k]) => [k, current?.overrides?.[k] == null ? '' : String(current.overrides[k])]));
  const save = async (e: FormEvent) => {
    e.preventDefault();
    if (!current) return;
    const body = Object.fromEntries(
      QUOTAS.filter(([k]) => values[k] !== (current.overrides?.[k] == null ? '' : String(current.overrides[k]))).map(
        ([k]) => [k, values[k] === '' ? null : Number(values[k])],
      ),
    );
    if (!Object.keys(body).length) return action.fail('Nothing changed.');
    if (await action.perform((call) => call('PUT', `/v2/workspaces/${current.workspace_id}/quotas`, body))) {
      setDraft(null);
      quotas.reload();
    }
  };
  return (
    <section aria-labelledby="quotas-title">
      <h2 id="quotas-title">Quotas</h2>
      <p className="hint">
        Any key reads the quotas in force; only an organization admin sets them. An empty field uses the server's
        default.
      </p>
      <ErrorText error={quotas.error} />
      {current && (
        <form className="form" onSubmit={save} noValidate>
          {QUOTAS.map(([k, label]) => (
            <Field
              key={k}
              label={label}
              name={k}
              action={action}
              hint={
                <>
                  In force: <QuotaValue name={k} value={current.quotas[k]} />
                  {BYTES.has(k) && values[k] && Number.isFinite(Number(values[k])) ? (
                    <>
                      ; entered: <QuotaValue name={k} value={Number(values[k])} />
                    </>
                  ) : null}
                </>
              }
              render={(ids) => (
                <input
                  {...ids}
                  type="number"
                  min="0"
                  step="1"
                  value={values[k] ?? ''}
                  onChange={(e) => setDraft({ ...values, [k]: e.target.value })}
                />
              )}
            />
          ))}
          <div>
            <button type="submit" className="primary" disabled={action.busy}>
              Save quotas
            </button>
          </div>
          <ActionOutcome action={action} />
        </form>
      )}
    </section>
  );
}

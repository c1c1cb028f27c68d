import { useId, useState } from 'react';
import { parseJsonInput, type AgentApi } from '../../api/agent';
import type { TracedRun } from '../../api/types';
import { Dialog, ErrorText } from '../common';
import { checkpointOf, forkPointOf, needsHistory, type ForkPoint } from './fork-point';

/** How many of the thread's latest checkpoints are searched for the one a run started from. */
const HISTORY_SEARCHED = 100;

async function resolveCheckpoint(agent: AgentApi, point: ForkPoint): Promise<string> {
  const history = needsHistory(point) ? await agent.history(point.threadId, HISTORY_SEARCHED) : [];
  const found = checkpointOf(point, history);
  if (!found)
    throw new Error(
      `The checkpoint this run started from is not among the thread's latest ${HISTORY_SEARCHED} checkpoints.`,
    );
  return found;
}

/**
 * "Fork from here": a new run on the run's thread from the checkpoint it started from (the node
 * runs again from there, with new input if typed), after a confirmation that says where.
 */
export function ForkRun({
  agent,
  run,
  threadPageHref,
}: {
  agent: AgentApi;
  run: TracedRun;
  threadPageHref: (threadId: string) => string;
}) {
  const id = useId();
  const point = forkPointOf(run);
  const [open, setOpen] = useState(false);
  const [checkpoint, setCheckpoint] = useState<string | null>(null);
  const [input, setInput] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  if (!point) return null;

  const ask = async () => {
    setError(null);
    setDone(null);
    setCheckpoint(null);
    setOpen(true);
    try {
      setCheckpoint(await resolveCheckpoint(agent, point));
    } catch (err) {
      setError(`No fork: ${(err as Error).message}`);
    }
  };
  const fork = async () => {
    setError(null);
    let parsed: unknown;
    try {
      parsed = parseJsonInput(input, true);
    } catch (err) {
      return setError((err as Error).message);
    }
    setBusy(true);
    try {
      const created = await agent.createRun(point.threadId, {
        assistant_id: point.assistantId,
        checkpoint_id: checkpoint!,
        ...(parsed === undefined ? {} : { input: parsed }),
      });
      setOpen(false);
      setInput('');
      setDone(`Forked: run ${created.run_id} started on the thread from checkpoint ${checkpoint}.`);
    } catch (err) {
      setError(`The deployment refused the fork: ${(err as Error).message}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="fork">
      <button type="button" onClick={ask}>
        Fork from here
      </button>
      {done && (
        <p className="notice" role="status">
          {done} <a href={threadPageHref(point.threadId)}>See it on the thread</a>
        </p>
      )}
      {!open && <ErrorText error={error} />}
      <Dialog title="Fork from here" open={open} onClose={() => setOpen(false)}>
        <p>
          Start a new run on thread <code>{point.threadId}</code> from{' '}
          {point.node ? (
            <>
              the checkpoint before node <strong>{point.node}</strong> ran
            </>
          ) : (
            'the checkpoint this run started from'
          )}
          {checkpoint ? (
            <>
              {' '}
              (<code>{checkpoint}</code>)
            </>
          ) : null}
          ? The thread's history keeps the run that was; the new one branches off it.
        </p>
        {!checkpoint && !error && <p role="status">Finding the checkpoint…</p>}
        <div className="field">
          <label htmlFor={`${id}-input`}>New input (JSON, optional)</label>
          <textarea
            id={`${id}-input`}
            rows={3}
            value={input}
            spellCheck={false}
            onChange={(e) => setInput(e.target.value)}
          />
        </div>
        <ErrorText error={error} />
        <div className="dialog-buttons">
          <button type="button" className="danger" onClick={fork} disabled={!checkpoint || busy}>
            {busy ? 'Forking…' : 'Fork'}
          </button>
          <button type="button" onClick={() => setOpen(false)}>
            Cancel
          </button>
        </div>
      </Dialog>
    </div>
  );
}

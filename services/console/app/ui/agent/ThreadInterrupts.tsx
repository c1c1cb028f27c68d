import { useId, useState, type FormEvent } from 'react';
import { parseJsonInput, type AgentApi, type Interrupt } from '../../api/agent';
import { ErrorText } from '../common';
import { jsonText } from './agent';
import { humanRequests } from './human-interrupt';
import { HumanRequests } from './HumanRequests';

interface InterruptsProps {
  agent: AgentApi;
  threadId: string;
  assistantId: string | null;
  interrupts: Interrupt[];
  onResumed: (message: string) => void;
}

/**
 * What an interrupted thread waits on, and the answer: Agent Inbox requests (HumanRequests) when
 * every interrupt follows that convention, else each value as JSON and a generic resume.
 */
export function ThreadInterrupts(props: InterruptsProps) {
  const entries = props.interrupts.map((interrupt) => ({ interrupt, requests: humanRequests(interrupt.value) }));
  if (entries.every((e) => e.requests))
    return (
      <HumanRequests
        agent={props.agent}
        threadId={props.threadId}
        assistantId={props.assistantId}
        onResumed={props.onResumed}
        entries={entries.map((e) => ({ interrupt: e.interrupt, requests: e.requests! }))}
      />
    );
  return <GenericResume {...props} />;
}

/**
 * Each interrupt's value as JSON, and the answer: a new run on the thread with
 * `command: {resume: <the JSON typed>}`.
 */
function GenericResume({ agent, threadId, assistantId, interrupts, onResumed }: InterruptsProps) {
  const id = useId();
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    if (!assistantId) return setError('The thread names no assistant to resume it with.');
    let resume: unknown;
    try {
      resume = parseJsonInput(text, false);
    } catch (err) {
      return setError((err as Error).message);
    }
    setBusy(true);
    try {
      const run = await agent.createRun(threadId, { assistant_id: assistantId, command: { resume } });
      setText('');
      onResumed(`Resumed: run ${run.run_id} started.`);
    } catch (err) {
      setError(`The deployment refused to resume the thread: ${(err as Error).message}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section aria-labelledby="interrupts-title" className="interrupts">
      <h2 id="interrupts-title">Waiting for a human</h2>
      <ol className="cards">
        {interrupts.map((interrupt, i) => (
          <li key={interrupt.id ?? i} className="card">
            <pre className="json" role="region" aria-label={`Interrupt ${i + 1} value`} tabIndex={0}>
              {jsonText(interrupt.value)}
            </pre>
          </li>
        ))}
      </ol>
      <form className="form" onSubmit={submit} aria-label="Resume the thread">
        <div className="field">
          <label htmlFor={`${id}-resume`}>Resume with (JSON)</label>
          <textarea
            id={`${id}-resume`}
            rows={3}
            value={text}
            spellCheck={false}
            aria-describedby={`${id}-hint`}
            onChange={(e) => setText(e.target.value)}
          />
          <span id={`${id}-hint`} className="hint">
            The value <code>interrupt()</code> returns in the graph: any JSON, such as{' '}
            <code>{'{"approved": true}'}</code> or <code>"yes"</code>.
          </span>
        </div>
        <div className="actions">
          <button type="submit" disabled={busy}>
            {busy ? 'Resuming…' : 'Resume'}
          </button>
        </div>
        <ErrorText error={error} />
      </form>
    </section>
  );
}

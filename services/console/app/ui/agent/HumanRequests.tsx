import { useId, useState, type FormEvent } from 'react';
import type { AgentApi, Interrupt } from '../../api/agent';
import { ErrorText } from '../common';
import { argWords, parseEditedArgs, resumeValue, type HumanInterrupt, type HumanResponse } from './human-interrupt';

/** An interrupt whose value follows the Agent Inbox convention, with its requests. */
export interface HumanInterruptEntry {
  interrupt: Interrupt;
  requests: HumanInterrupt[];
}

interface Answering {
  agent: AgentApi;
  threadId: string;
  assistantId: string | null;
  /** How many interrupts the thread waits on (several: each is resumed by its id). */
  pending: number;
  onResumed: (message: string) => void;
}

/** The words the notice uses for each answer. */
const ANSWERED: Record<HumanResponse['type'], string> = {
  accept: 'accepted',
  edit: 'edited',
  response: 'answered',
  ignore: 'ignored',
};

/**
 * One request of the Agent Inbox convention: the action the graph would take and its arguments in
 * words, and only the answers its `config` allows (Accept, Edit, Respond, Ignore), each resuming
 * the thread with `[{type, args}]`. `answerable` false: shown only (the convention answers an
 * interrupt's first request).
 */
function HumanRequest({
  request,
  interruptId,
  answerable,
  answering,
}: {
  request: HumanInterrupt;
  interruptId: string | undefined;
  answerable: boolean;
  answering: Answering;
}) {
  const id = useId();
  const { action, args } = request.action_request;
  const { config } = request;
  const [mode, setMode] = useState<'edit' | 'respond' | null>(null);
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const send = async (response: HumanResponse) => {
    setError(null);
    const { agent, threadId, assistantId, pending, onResumed } = answering;
    if (!assistantId) return setError('The thread names no assistant to resume it with.');
    setBusy(true);
    try {
      const resume = resumeValue(response, interruptId, pending);
      const run = await agent.createRun(threadId, { assistant_id: assistantId, command: { resume } });
      setMode(null);
      onResumed(`Resumed (${action} ${ANSWERED[response.type]}): run ${run.run_id} started.`);
    } catch (err) {
      setError(`The deployment refused to resume the thread: ${(err as Error).message}`);
    } finally {
      setBusy(false);
    }
  };
  const open = (next: 'edit' | 'respond') => {
    setError(null);
    setMode(next);
    setText(next === 'edit' ? JSON.stringify(args, null, 2) : '');
  };
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    if (mode === 'respond') {
      if (!text.trim()) return setError('Type a response to send.');
      return send({ type: 'response', args: text });
    }
    try {
      return send({ type: 'edit', args: { action, args: parseEditedArgs(text) } });
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const entries = Object.entries(args);
  const nothingAllowed = !config.allow_accept && !config.allow_edit && !config.allow_respond && !config.allow_ignore;
  return (
    <article aria-labelledby={`${id}-title`} className="human-request">
      <h3 id={`${id}-title`}>
        Action <code>{action}</code>
      </h3>
      {request.description && <p>{request.description}</p>}
      {entries.length ? (
        <dl className="config" aria-label={`Arguments of ${action}`}>
          {entries.map(([key, value]) => (
            <div key={key}>
              <dt>{key}</dt>
              <dd>{argWords(value)}</dd>
            </div>
          ))}
        </dl>
      ) : (
        <p>No arguments.</p>
      )}
      {!answerable ? (
        <p className="hint">Only an interrupt's first request is answered; this one is shown for context.</p>
      ) : nothingAllowed ? (
        <p className="hint">The graph allows no answer to this request here.</p>
      ) : (
        <div className="actions" role="group" aria-label={`Answer ${action}`}>
          {config.allow_accept && (
            <button
              type="button"
              className="primary"
              disabled={busy}
              onClick={() => send({ type: 'accept', args: null })}
            >
              Accept
            </button>
          )}
          {config.allow_edit && (
            <button type="button" disabled={busy} aria-expanded={mode === 'edit'} onClick={() => open('edit')}>
              Edit
            </button>
          )}
          {config.allow_respond && (
            <button type="button" disabled={busy} aria-expanded={mode === 'respond'} onClick={() => open('respond')}>
              Respond
            </button>
          )}
          {config.allow_ignore && (
            <button
              type="button"
              className="secondary"
              disabled={busy}
              onClick={() => send({ type: 'ignore', args: null })}
            >
              Ignore
            </button>
          )}
        </div>
      )}
      {mode && (
        <form
          className="form"
          onSubmit={submit}
          aria-label={mode === 'edit' ? `Edit the arguments of ${action}` : `Respond to ${action}`}
        >
          <div className="field">
            <label htmlFor={`${id}-text`}>{mode === 'edit' ? 'Arguments (JSON)' : 'Your response'}</label>
            <textarea
              id={`${id}-text`}
              rows={mode === 'edit' ? Math.min(12, entries.length + 2) : 3}
              value={text}
              spellCheck={mode === 'respond'}
              aria-describedby={`${id}-hint`}
              onChange={(e) => setText(e.target.value)}
            />
            <span id={`${id}-hint`} className="hint">
              {mode === 'edit'
                ? `The arguments ${action} runs with instead: a JSON object.`
                : 'Sent to the graph as your answer, in place of the action.'}
            </span>
          </div>
          <div className="actions">
            <button type="submit" disabled={busy}>
              {busy ? 'Sending…' : mode === 'edit' ? 'Send the edited arguments' : 'Send the response'}
            </button>
            <button type="button" className="secondary" disabled={busy} onClick={() => setMode(null)}>
              Cancel
            </button>
          </div>
        </form>
      )}
      <ErrorText error={error} />
    </article>
  );
}

/**
 * What an interrupted thread waits on when every interrupt follows the Agent Inbox convention
 * (human-interrupt.ts): each request readably, with the answers it allows.
 */
export function HumanRequests({
  entries,
  ...answering
}: Omit<Answering, 'pending'> & { entries: HumanInterruptEntry[] }) {
  return (
    <section aria-labelledby="interrupts-title" className="interrupts">
      <h2 id="interrupts-title">Waiting for a human</h2>
      <ol className="cards">
        {entries.map(({ interrupt, requests }, i) => (
          <li key={interrupt.id ?? i} className="card">
            {requests.map((request, j) => (
              <HumanRequest
                // A request has no id: its place in the interrupt is what names it.
                key={j}
                request={request}
                interruptId={interrupt.id}
                answerable={j === 0}
                answering={{ ...answering, pending: entries.length }}
              />
            ))}
          </li>
        ))}
      </ol>
    </section>
  );
}

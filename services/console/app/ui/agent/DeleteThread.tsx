import { useState } from 'react';
import type { AgentApi } from '../../api/agent';
import { Dialog, ErrorText, navigate } from '../common';

/** Deletes a thread (its state, checkpoints and runs) after a confirmation, then goes back to the threads. */
export function DeleteThread({ agent, deploymentId, threadId }: { agent: AgentApi; deploymentId: string; threadId: string }) {
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const remove = async () => {
    setBusy(true);
    setError(null);
    try {
      await agent.deleteThread(threadId);
      navigate(`/deployments/${deploymentId}`, { tab: 'agent' });
    } catch (err) {
      setError((err as Error).message);
      setBusy(false);
    }
  };
  return (
    <>
      <button type="button" className="danger" onClick={() => setOpen(true)}>
        Delete thread
      </button>
      <Dialog title="Delete this thread?" open={open} onClose={() => setOpen(false)}>
        <p>
          Thread <code>{threadId}</code> goes with its state, checkpoints and runs, for good. Its traces stay.
        </p>
        <ErrorText error={error} />
        <div className="dialog-buttons">
          <button type="button" className="danger" disabled={busy} onClick={remove}>
            {busy ? 'Deleting…' : 'Delete the thread'}
          </button>
          <button type="button" className="secondary" onClick={() => setOpen(false)}>
            Cancel
          </button>
        </div>
      </Dialog>
    </>
  );
}

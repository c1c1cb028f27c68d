import { useState } from 'react';
import type { AgentApi } from '../../api/agent';
import { useAction } from '../ApiCall';
import { Dialog, ErrorText, navigate } from '../common';

/** Deletes a thread (its state, checkpoints and runs) after a confirmation, then goes back to the threads. */
export function DeleteThread({
  agent,
  deploymentId,
  threadId,
}: {
  agent: AgentApi;
  deploymentId: string;
  threadId: string;
}) {
  const [open, setOpen] = useState(false);
  const action = useAction();
  const remove = async () => {
    const deleted = await action.perform(async () => {
      await agent.deleteThread(threadId);
      return true;
    });
    if (deleted) navigate(`/deployments/${deploymentId}`, { tab: 'agent' });
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
        <ErrorText error={action.error} />
        <div className="dialog-buttons">
          <button type="button" className="danger" disabled={action.busy} onClick={remove}>
            {action.busy ? 'Deleting…' : 'Delete the thread'}
          </button>
          <button type="button" className="secondary" onClick={() => setOpen(false)}>
            Cancel
          </button>
        </div>
      </Dialog>
    </>
  );
}

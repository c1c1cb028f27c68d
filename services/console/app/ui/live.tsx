import { useEffect, useRef, useState } from 'react';
import { watchEvents, type LiveMode } from '../api/live';
import type { LiveEvent } from '../api/types';
import { useApi } from './common';

export interface LiveState {
  mode: LiveMode;
  /** The id of the last event the stream brought (null before the first). */
  lastEventId: string | null;
}

/**
 * Keeps a page current: `refresh` runs (at most every 300 ms) when an event for which `wanted`
 * holds arrives, and on every poll while the stream is not there. Returns the mode and the last
 * event received, for display.
 */
export function useLiveRefresh(refresh: () => void, wanted: (event: LiveEvent) => boolean): LiveState {
  const api = useApi();
  const [mode, setMode] = useState<LiveMode>('connecting');
  const [lastEventId, setLastEventId] = useState<string | null>(null);
  const latest = useRef({ refresh, wanted });
  latest.current = { refresh, wanted };
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const soon = () => {
      if (timer) return;
      timer = setTimeout(() => {
        timer = undefined;
        latest.current.refresh();
      }, 300);
    };
    const stop = watchEvents(api, {
      onEvent: (event) => {
        setLastEventId(event.id);
        if (latest.current.wanted(event)) soon();
      },
      refresh: () => latest.current.refresh(),
      onMode: setMode,
    });
    return () => {
      stop();
      clearTimeout(timer);
    };
  }, [api]);
  return { mode, lastEventId };
}

/** Says how the page stays current; `data-last-event-id` names the last event the stream brought. */
export function LiveIndicator({ mode, lastEventId = null }: { mode: LiveMode; lastEventId?: string | null }) {
  const text =
    mode === 'live'
      ? 'Live: updates as events arrive'
      : mode === 'polling'
        ? 'Refreshing every few seconds'
        : 'Connecting…';
  return (
    <p
      className={`live live-${mode}`}
      role="status"
      aria-live="polite"
      data-mode={mode}
      data-last-event-id={lastEventId ?? undefined}
    >
      {text}
    </p>
  );
}

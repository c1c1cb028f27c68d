import { useEffect, useRef, useState } from 'react';
import { watchEvents, type LiveMode } from '../api/live';
import type { LiveEvent } from '../api/types';
import { useApi } from './common';

/**
 * Keeps a page current: `refresh` runs (at most every 300 ms) when an event for which `wanted`
 * holds arrives, and on every poll while the stream is not there. Returns the mode for display.
 */
export function useLiveRefresh(refresh: () => void, wanted: (event: LiveEvent) => boolean): LiveMode {
  const api = useApi();
  const [mode, setMode] = useState<LiveMode>('connecting');
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
      onEvent: (event) => latest.current.wanted(event) && soon(),
      refresh: () => latest.current.refresh(),
      onMode: setMode,
    });
    return () => {
      stop();
      clearTimeout(timer);
    };
  }, [api]);
  return mode;
}

export function LiveIndicator({ mode }: { mode: LiveMode }) {
  const text = mode === 'live' ? 'Live: updates as events arrive' : mode === 'polling' ? 'Refreshing every few seconds' : 'Connecting…';
  return (
    <p className={`live live-${mode}`} role="status" aria-live="polite">
      {text}
    </p>
  );
}

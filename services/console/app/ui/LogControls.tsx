/** The levels a log line can have, in rising order. */
const LOG_LEVELS = ['debug', 'info', 'warn', 'error'];

/**
 * The controls every followed log has: Pause (new lines are held back, counted on the button)
 * and Resume, and the Level filter. Rendered inside the log view's own filters form, beside
 * its other filters.
 */
export function LogControls({
  paused,
  held,
  pause,
  resume,
  level,
  setLevel,
}: {
  paused: boolean;
  /** How many lines are held back while paused. */
  held: number;
  pause: () => void;
  /** Shows the held lines and follows again. */
  resume: () => void;
  /** The level shown, '' for all. */
  level: string;
  setLevel: (level: string) => void;
}) {
  return (
    <>
      {paused ? (
        <button type="button" className="secondary" onClick={resume}>
          Resume{held ? ` (${held} new line${held === 1 ? '' : 's'})` : ''}
        </button>
      ) : (
        <button type="button" className="secondary" onClick={pause}>
          Pause
        </button>
      )}
      <label>
        Level
        <select value={level} onChange={(e) => setLevel(e.target.value)}>
          <option value="">All levels</option>
          {LOG_LEVELS.map((l) => (
            <option key={l}>{l}</option>
          ))}
        </select>
      </label>
    </>
  );
}

import { useEffect, useState } from 'react';

export type Theme = 'light' | 'dark';

/** The one thing the console keeps in localStorage, and only once the user picks a theme. */
const THEME_KEY = 'slipway.console.theme';
const systemPrefersDark = () => window.matchMedia?.('(prefers-color-scheme: dark)').matches ?? false;

/** The theme picked with the toggle, if any. */
function storedTheme(): Theme | null {
  try {
    const value = localStorage.getItem(THEME_KEY);
    return value === 'light' || value === 'dark' ? value : null;
  } catch {
    return null;
  }
}

const systemTheme = (): Theme => (systemPrefersDark() ? 'dark' : 'light');

/**
 * Marks the page with the theme (`<html data-theme>`, which the stylesheet follows): the one
 * picked with the toggle, else the system's, followed while nothing is picked. Runs before the
 * first render.
 */
export function applyStoredTheme(): void {
  document.documentElement.dataset.theme = storedTheme() ?? systemTheme();
  window.matchMedia?.('(prefers-color-scheme: dark)').addEventListener?.('change', () => {
    if (!storedTheme()) document.documentElement.dataset.theme = systemTheme();
  });
}

/**
 * The theme the page shows now, following `<html data-theme>` (the toggle, or the system's while
 * nothing is picked): for what draws its own colours (uPlot's canvas) and must redraw on a change.
 */
export function useTheme(): Theme {
  const read = (): Theme => (document.documentElement.dataset.theme === 'dark' ? 'dark' : 'light');
  const [theme, setTheme] = useState<Theme>(read);
  useEffect(() => {
    const observer = new MutationObserver(() => setTheme(read()));
    observer.observe(document.documentElement, { attributes: true, attributeFilter: ['data-theme'] });
    return () => observer.disconnect();
  }, []);
  return theme;
}

/**
 * A switch between light and dark, starting from the picked theme or the system's; remembered.
 * It says what it does ("Light mode" while dark is on). A label that changes with the state
 * makes it an action, not an on/off switch, so it carries no aria-pressed (which would announce
 * "Light mode, pressed" while the page is dark).
 */
export function ThemeToggle() {
  const [theme, setTheme] = useState<Theme>(() =>
    document.documentElement.dataset.theme === 'dark' ? 'dark' : 'light',
  );
  const next: Theme = theme === 'dark' ? 'light' : 'dark';
  // While nothing is picked the page follows the system's theme: so does the label.
  useEffect(() => {
    const media = window.matchMedia?.('(prefers-color-scheme: dark)');
    const follow = () => setTheme(document.documentElement.dataset.theme === 'dark' ? 'dark' : 'light');
    media?.addEventListener?.('change', follow);
    return () => media?.removeEventListener?.('change', follow);
  }, []);
  const toggle = () => {
    document.documentElement.dataset.theme = next;
    try {
      localStorage.setItem(THEME_KEY, next);
    } catch {
      // Storage refused (private mode): the choice lasts for this page only.
    }
    setTheme(next);
  };
  return (
    <button
      type="button"
      className="theme-toggle secondary"
      data-theme-now={theme}
      title={`Switch to ${next} mode`}
      onClick={toggle}
    >
      {next === 'dark' ? 'Dark mode' : 'Light mode'}
    </button>
  );
}

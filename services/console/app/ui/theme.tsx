import { useState } from 'react';

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

/** A switch between light and dark, starting from the picked theme or the system's; remembered. */
export function ThemeToggle() {
  const [theme, setTheme] = useState<Theme>(() => (document.documentElement.dataset.theme === 'dark' ? 'dark' : 'light'));
  const toggle = () => {
    const next: Theme = theme === 'dark' ? 'light' : 'dark';
    document.documentElement.dataset.theme = next;
    try {
      localStorage.setItem(THEME_KEY, next);
    } catch {
      // Storage refused (private mode): the choice lasts for this page only.
    }
    setTheme(next);
  };
  return (
    <button type="button" className="theme-toggle" aria-pressed={theme === 'dark'} onClick={toggle}>
      Dark mode
    </button>
  );
}

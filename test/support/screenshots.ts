import { copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';

/**
 * Where the browser tests' pictures go: test/browser/output/ (gitignored) always, and
 * docs/images/ as well when SLIPWAY_WRITE_SCREENSHOTS=1 (`pnpm docs:screenshots`), for
 * docs/console.md.
 */
const HERE = path.dirname(fileURLToPath(import.meta.url));
export const SCREENSHOTS = path.join(HERE, '../browser/output');
const DOCS_IMAGES = path.join(HERE, '../../docs/images');
const WRITE_DOCS = process.env.SLIPWAY_WRITE_SCREENSHOTS === '1';

export type Theme = 'light' | 'dark';

export function prepareScreenshots(): void {
  mkdirSync(SCREENSHOTS, { recursive: true });
  if (WRITE_DOCS) mkdirSync(DOCS_IMAGES, { recursive: true });
}

/** Saves the viewport (never the whole page: the docs want pictures of a screen) as `console-<name>-<theme>.png`. */
export async function shoot(page: Page, name: string, theme: Theme): Promise<void> {
  const file = `console-${name}-${theme}.png`;
  await page.screenshot({ path: path.join(SCREENSHOTS, file) });
  if (WRITE_DOCS) copyFileSync(path.join(SCREENSHOTS, file), path.join(DOCS_IMAGES, file));
}

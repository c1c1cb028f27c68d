import { existsSync } from 'node:fs';

/** Debian's Chromium (apt-get install -y chromium); `npx playwright install` cannot download here. */
export const CHROMIUM = '/usr/bin/chromium';
export const hasChromium = existsSync(CHROMIUM);
/** CI installs Chromium and sets this, so browser tests can never silently not run there. */
export const browserRequired = process.env.SLIPWAY_REQUIRE_BROWSER === '1';
/** Headless, with nothing that phones home. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// The console is served by the api at /console and /api-host/console: relative asset URLs work
// under both. Pages are addressed by the URL fragment, so no server-side routing is needed.
export default defineConfig({
  root: 'app',
  base: './',
  plugins: [react()],
  build: {
    outDir: '../dist',
    emptyOutDir: true,
    // Everything in files of our own: the api's policy allows no inline script or style.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    target: 'es2022',
  },
});

/** Where source code comes from: repository-host providers and fetching (git, tarballs). */
export * from './providers/index.js';
export * from './fetch/index.js';

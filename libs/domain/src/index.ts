export * from './errors.js';
export * from './naming.js';

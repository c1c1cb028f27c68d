export * from './artifact.js';
export * from './deployment-rules.js';
export * from './errors.js';
export * from './graph-config.js';
export * from './naming.js';
export * from './resource-spec.js';
export * from './status.js';
export * from './storable-text.js';

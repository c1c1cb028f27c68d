export declare const START_ENTRIES: Readonly<
  Record<'cli' | 'api' | 'builder' | 'deployer' | 'edge' | 'registry', { source: string; built: string }>
>;
export declare const STAMP: string;
export declare function sourcesHash(): string;
export declare function ensureStartBuild(): Promise<boolean>;

export declare const CONSOLE_DIR: string;
export declare const CONSOLE_DIST: string;
export declare const CONSOLE_INPUTS: readonly string[];
export declare const CONSOLE_STAMP: string;
export declare function consoleSourcesHash(root?: string): string;
export declare function consoleIsStale(root?: string): boolean;
export declare function buildConsole(): void;
export declare function viteBuild(outDir: string): void;
export declare function ensureConsole(): void;

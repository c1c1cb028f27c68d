export declare const CONSOLE_DIR: string;
export declare const CONSOLE_DIST: string;
export declare function consoleIsStale(): boolean;
export declare function buildConsole(): void;
export declare function ensureConsole(): void;

import { execFile } from 'node:child_process';

/** How long one run of the hook may take (publishing a record can wait for the provider's propagation). */
const HOOK_TIMEOUT_MS = 300_000;
/** The end of the hook's output kept in an error (the domain's `failed` message names it). */
const OUTPUT_TAIL = 600;
/**
 * The edge's own variables are not the hook's business: its credentials (the database's, Redis',
 * the secrets key) stay in the edge. Everything else (the provider's token, PATH, HOME) is passed.
 */
const WITHHELD = /^(SLIPWAY_|DATABASE_|REDIS_|PG)/;

export type DnsHookAction = 'present' | 'cleanup';

/**
 * `SLIPWAY_ACME_DNS_HOOK` (docs/operations.md, The edge): the operator's executable that publishes
 * a TXT record at their DNS provider and removes it, run as `<hook> present <record name> <value>`
 * and `<hook> cleanup <record name> <value>`, the name fully qualified with its trailing dot
 * (`_acme-challenge.apps.example.com.`) — the convention of lego's `exec` provider, so its
 * scripts work as they are. `present` returns once the record is published (exit 0); any other
 * exit fails the order with the end of what the hook printed. No shell is involved: arguments
 * are passed as they are.
 */
export class DnsHook {
  constructor(
    private readonly path: string,
    private readonly timeoutMs = HOOK_TIMEOUT_MS,
  ) {}

  present(recordName: string, value: string): Promise<void> {
    return this.run('present', recordName, value);
  }

  cleanup(recordName: string, value: string): Promise<void> {
    return this.run('cleanup', recordName, value);
  }

  private run(action: DnsHookAction, recordName: string, value: string): Promise<void> {
    const fqdn = recordName.endsWith('.') ? recordName : `${recordName}.`;
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !WITHHELD.test(name)));
    return new Promise((resolve, reject) => {
      execFile(
        this.path,
        [action, fqdn, value],
        { env, timeout: this.timeoutMs, killSignal: 'SIGKILL', maxBuffer: 1024 * 1024 },
        (err, stdout, stderr) => {
          if (!err) return resolve();
          const output = `${stderr}${stdout}`.trim().slice(-OUTPUT_TAIL);
          const why = err.killed
            ? `did not finish within ${this.timeoutMs / 1000} s`
            : typeof err.code === 'number'
              ? `exited with ${err.code}`
              : err.message;
          reject(new Error(`The DNS hook's ${action} for ${fqdn} ${why}${output ? `: ${output}` : ''}`));
        },
      );
    });
  }
}

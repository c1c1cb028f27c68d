import { readFileSync, statSync } from 'node:fs';
import { createSecureContext, type SecureContextOptions } from 'node:tls';
import type { Logger } from '@slipway/logging';

/** How often the files are looked at for a renewal. */
const CHECK_MS = 60_000;

/**
 * An operator's certificate for the apps domain (`SLIPWAY_TLS_CERT_FILE`, `SLIPWAY_TLS_KEY_FILE`):
 * the PEM chain, leaf first, served whole, and its key. Read at start (a pair that does not load
 * stops the edge, naming the files), and again when either file changes; a changed pair that does
 * not load is logged and the certificate in use stays.
 */
export class CertificateFiles {
  private stamp = '';

  constructor(
    private readonly certFile: string,
    private readonly keyFile: string,
  ) {}

  read(): SecureContextOptions {
    const tls = { cert: readFileSync(this.certFile), key: readFileSync(this.keyFile) };
    try {
      createSecureContext(tls);
    } catch (err) {
      throw new Error(
        `SLIPWAY_TLS_CERT_FILE ${this.certFile} and SLIPWAY_TLS_KEY_FILE ${this.keyFile} ` +
          `do not load as a certificate and its key: ${(err as Error).message}`,
      );
    }
    this.stamp = this.currentStamp();
    return tls;
  }

  /** Calls `use` with the pair whenever it changed and loads; returns the timer. */
  watch(use: (tls: SecureContextOptions) => void, log: Logger): NodeJS.Timeout {
    const timer = setInterval(() => {
      try {
        if (this.currentStamp() === this.stamp) return;
        use(this.read());
        log.info({ certFile: this.certFile }, 'edge: took the renewed certificate');
      } catch (err) {
        log.error(
          { err, certFile: this.certFile },
          'edge: the changed certificate files do not load; kept serving the one in use',
        );
      }
    }, CHECK_MS);
    timer.unref();
    return timer;
  }

  private currentStamp(): string {
    return [this.certFile, this.keyFile].map((f) => `${statSync(f).mtimeMs}:${statSync(f).size}`).join('/');
  }
}

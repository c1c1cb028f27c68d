import { checkOutboundUrl, OutboundError, type OutboundPolicy } from '@slipway/net';
import { RequestValidationError } from '@slipway/domain';

/**
 * The SSRF rules for a URL the server will fetch (docs/api.md, Integrations): https to a public
 * address unless its host is allow-listed (SLIPWAY_OUTBOUND_ALLOW_HOSTS); a literal or resolved
 * private, loopback or link-local address is a 422 at `loc`, naming the field. A name that does
 * not resolve now is accepted: every fetch checks the URL again after its own DNS lookup.
 */
export async function checkOutboundField(url: string, policy: OutboundPolicy, loc: string[]): Promise<void> {
  try {
    await checkOutboundUrl(url, policy);
  } catch (err) {
    if (!(err instanceof OutboundError)) throw err;
    if (err.code === 'refused')
      throw new RequestValidationError([
        { loc, msg: `Value error, ${loc.at(-1)} ${err.message}`, type: 'value_error' },
      ]);
  }
}

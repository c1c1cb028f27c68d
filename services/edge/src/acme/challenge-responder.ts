import type { IncomingMessage, ServerResponse } from 'node:http';
import type { EdgeCertificateRepository } from '@slipway/db';

const PREFIX = '/.well-known/acme-challenge/';
/** Tokens are base64url (RFC 8555 §8.3); anything else is not one of ours. */
const TOKEN = /^[A-Za-z0-9_-]{1,256}$/;
/** How long an answer (or its absence) is remembered: the CA asks a few times within seconds. */
const CACHE_MS = 2_000;
const CACHE_MAX = 1_000;

type Source = Pick<EdgeCertificateRepository, 'challenge'>;

const cache = new Map<string, { at: number; answer: string | null }>();

/**
 * Answers an ACME HTTP-01 request (`GET /.well-known/acme-challenge/<token>`, RFC 8555 §8.3) from
 * the pending challenges in Postgres, so whichever edge replica the CA reaches answers: the key
 * authorization as text/plain, 404 for an unknown token, 503 when Postgres cannot be asked.
 * Returns whether the request was one (and is answered); anything else is left to the caller.
 * Never throws.
 */
export async function answerAcmeChallenge(req: IncomingMessage, res: ServerResponse, repo: Source): Promise<boolean> {
  const url = req.url ?? '';
  if (!url.startsWith(PREFIX)) return false;
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  try {
    const token = url.slice(PREFIX.length).split('?')[0]!;
    const answer = TOKEN.test(token) ? await lookup(token, repo) : null;
    if (answer === null) {
      reply(req, res, 404, 'Not found.\n');
    } else {
      reply(req, res, 200, answer);
    }
  } catch {
    try {
      reply(req, res, 503, 'Try again.\n');
    } catch {
      res.destroy();
    }
  }
  return true;
}

async function lookup(token: string, repo: Source): Promise<string | null> {
  const now = Date.now();
  const hit = cache.get(token);
  if (hit && now - hit.at < CACHE_MS) return hit.answer;
  const answer = await repo.challenge(token);
  if (cache.size >= CACHE_MAX) {
    for (const [key, value] of cache) if (now - value.at >= CACHE_MS) cache.delete(key);
    if (cache.size >= CACHE_MAX) cache.clear();
  }
  cache.set(token, { at: now, answer });
  return answer;
}

function reply(req: IncomingMessage, res: ServerResponse, status: number, body: string): void {
  if (res.headersSent) return void res.end();
  res.writeHead(status, {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
  });
  res.end(req.method === 'HEAD' ? undefined : body);
  req.resume();
}

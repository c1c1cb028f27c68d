import { describe, expect, it } from 'vitest';
import { generateWebhookSecret, signWebhook } from './webhook-signature.js';

describe('signWebhook', () => {
  it('matches the Standard Webhooks reference example', () => {
    // The example of the Standard Webhooks specification and its reference libraries.
    const headers = signWebhook(
      'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      'msg_p5jXN8AQM9LWM0D4loKWxJek',
      1614265330,
      '{"test": 2432232314}',
    );
    expect(headers).toEqual({
      'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      'webhook-timestamp': '1614265330',
      'webhook-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    });
  });

  it('makes secrets of 32 random bytes, never the same twice', () => {
    const a = generateWebhookSecret();
    expect(Buffer.from(a.slice('whsec_'.length), 'base64')).toHaveLength(32);
    expect(generateWebhookSecret()).not.toBe(a);
  });
});

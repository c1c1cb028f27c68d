import { describe, expect, it } from 'vitest';
import { forwardHeaders } from './forwarding.js';

describe('forwardHeaders', () => {
  const sent = {
    host: 'app.example',
    connection: 'keep-alive, x-drop',
    'x-drop': '1',
    'x-forwarded-for': '1.1.1.1',
    'x-forwarded-proto': 'https',
    'x-kept': 'yes',
  };

  it('drops hop-by-hop headers and those Connection names, and adds the forwarding ones', () => {
    expect(forwardHeaders(sent, { address: '10.0.0.1', proto: 'http' })).toEqual({
      host: 'app.example',
      'x-kept': 'yes',
      'x-forwarded-for': '1.1.1.1, 10.0.0.1',
      'x-forwarded-host': 'app.example',
      'x-forwarded-proto': 'http',
    });
  });

  it(
    "makes a caller's edits in the same copy: omitted headers are never copied, " +
      'set ones win over the forwarding ones, undefined sets nothing',
    () => {
      const headers = forwardHeaders(
        { ...sent, 'x-forwarded-host': 'client.example', 'x-stated': 'forged' },
        { address: '10.0.0.1', proto: 'keep' },
        {
          omit: ['x-forwarded-for', 'x-forwarded-proto', 'x-stated'],
          set: { 'x-forwarded-host': 'edge.example', 'x-token': 't', 'x-kept': undefined },
        },
      );
      expect(headers).toEqual({
        host: 'app.example',
        'x-kept': 'yes',
        'x-forwarded-for': '10.0.0.1',
        'x-forwarded-host': 'edge.example',
        'x-forwarded-proto': 'http',
        'x-token': 't',
      });
      expect(sent['x-forwarded-for']).toBe('1.1.1.1');
    },
  );
});

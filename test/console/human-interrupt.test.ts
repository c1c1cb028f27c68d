import { describe, expect, it } from 'vitest';
import {
  argWords,
  humanRequests,
  parseEditedArgs,
  requestSummary,
  resumeValue,
} from '../../services/console/app/ui/agent/human-interrupt.js';

/** The console's reading of Agent Inbox interrupts (LangGraph's HumanInterrupt) and the answers it sends. */

const request = (config: Partial<Record<string, unknown>> = {}) => ({
  action_request: { action: 'send_email', args: { to: 'a@example.com' } },
  config: { allow_ignore: true, allow_respond: true, allow_edit: true, allow_accept: true, ...config },
  description: 'Review it.',
});

describe('humanRequests', () => {
  it('reads a HumanInterrupt, or a list of them, and nothing else', () => {
    expect(humanRequests(request())).toEqual([request()]);
    expect(humanRequests([request(), request()])).toHaveLength(2);
    // Anything off the convention is a generic interrupt.
    for (const value of [
      null,
      'yes',
      { question: 'Ship the plan?' },
      [],
      [request(), { question: 'x' }],
      { ...request(), config: { allow_accept: true } },
      request({ allow_edit: 'yes' }),
      { ...request(), action_request: { action: 'send_email', args: ['to'] } },
      { ...request(), description: 7 },
    ])
      expect(humanRequests(value), JSON.stringify(value)).toBeNull();
  });

  it('summarizes a request for the inbox as action and description', () => {
    expect(requestSummary([request()])).toBe('send_email: Review it.');
    expect(requestSummary({ ...request(), description: undefined })).toBe('send_email: waiting for review');
    expect(requestSummary({ question: 'x' })).toBeNull();
  });
});

describe('answers', () => {
  it('puts arguments in words', () => {
    expect([argWords('hi'), argWords(''), argWords(3), argWords(true), argWords(null), argWords({ a: [1] })]).toEqual([
      'hi',
      '(empty)',
      '3',
      'yes',
      'none',
      '{"a":[1]}',
    ]);
  });

  it('takes edited arguments only as a JSON object', () => {
    expect(parseEditedArgs('{"to": "b@example.com"}')).toEqual({ to: 'b@example.com' });
    expect(() => parseEditedArgs('{to: b}')).toThrow(/That is no JSON/);
    for (const text of ['[1]', '"x"', 'null', '3']) expect(() => parseEditedArgs(text)).toThrow(/JSON object/);
  });

  it('resumes with a list of one response, by interrupt id when the thread waits on several', () => {
    const response = { type: 'response' as const, args: 'no' };
    expect(resumeValue(response, 'i1', 1)).toEqual([response]);
    expect(resumeValue(response, 'i1', 2)).toEqual({ i1: [response] });
    expect(resumeValue(response, undefined, 2)).toEqual([response]);
  });
});

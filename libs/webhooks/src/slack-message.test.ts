import { describe, expect, it } from 'vitest';
import { slackMessage } from './slack-message.js';

const base = { id: '7', created_at: '2026-11-22T10:00:00.000Z', deployment_id: 'd1', revision_id: 'r1' };

describe('slackMessage', () => {
  it('says each event type in one line', () => {
    expect(
      slackMessage({
        ...base,
        type: 'revision.status_changed',
        data: { from: 'DEPLOYING', to: 'DEPLOY_FAILED', status_message: 'Health check timed out.' },
      }),
    ).toEqual({
      text: '[Slipway] Revision r1 of deployment d1: DEPLOYING → DEPLOY_FAILED. Health check timed out.',
    });
    expect(
      slackMessage({
        ...base,
        type: 'revision.status_changed',
        data: { from: 'DEPLOYING', to: 'DEPLOYED', status_message: null },
      }).text,
    ).toBe('[Slipway] Revision r1 of deployment d1: DEPLOYING → DEPLOYED.');
    expect(slackMessage({ ...base, revision_id: null, type: 'deployment.deleted', data: { name: 'agent' } }).text).toBe(
      '[Slipway] Deployment agent (d1) deleted.',
    );
    expect(
      slackMessage({
        ...base,
        revision_id: null,
        type: 'deployment.status_changed',
        data: { from: 'READY', to: 'UNUSED' },
      }).text,
    ).toBe('[Slipway] Deployment d1: READY → UNUSED.');
    expect(slackMessage({ ...base, type: 'revision.created', data: { status: 'CREATING' } }).text).toBe(
      '[Slipway] New revision r1 of deployment d1 (CREATING).',
    );
    expect(
      slackMessage({
        ...base,
        deployment_id: null,
        revision_id: null,
        type: 'webhook.test',
        data: { webhook_id: 'w1', requested_by: 'api-key:k1' },
      }).text,
    ).toBe('[Slipway] Test delivery for webhook w1, sent by api-key:k1.');
  });

  it('escapes &, < and > in user-controlled text, so a name or message cannot mention @channel or hide a link', () => {
    const message = 'Pull failed <!channel> <https://evil.example/login|click here> & <@U123>';
    expect(
      slackMessage({
        ...base,
        type: 'revision.status_changed',
        data: { from: 'DEPLOYING', to: 'DEPLOY_FAILED', status_message: message },
      }).text,
    ).toBe(
      '[Slipway] Revision r1 of deployment d1: DEPLOYING → DEPLOY_FAILED. Pull failed &lt;!channel&gt; ' +
        '&lt;https://evil.example/login|click here&gt; &amp; &lt;@U123&gt;',
    );
    expect(
      slackMessage({ ...base, revision_id: null, type: 'deployment.deleted', data: { name: '<!here>&amp;' } }).text,
    ).toBe('[Slipway] Deployment &lt;!here&gt;&amp;amp; (d1) deleted.');
  });
});

import type { PublicEvent } from '@slipway/db';

const str = (v: unknown) => (typeof v === 'string' && v ? v : null);

/** One line saying what happened, for people. Ids only: an event carries no secret. */
export function describeEvent(e: PublicEvent): string {
  const d = e.data as Record<string, unknown>;
  const deployment = str(d.name) ? `${d.name} (${e.deployment_id})` : `${e.deployment_id}`;
  const revision = `revision ${e.revision_id} of deployment ${e.deployment_id}`;
  switch (e.type) {
    case 'deployment.created':
      return `Deployment ${deployment} created.`;
    case 'deployment.deleted':
      return `Deployment ${deployment} deleted.`;
    case 'deployment.status_changed':
      return `Deployment ${deployment}: ${d.from} → ${d.to}.`;
    case 'revision.created':
      return `New ${revision} (${d.status}).`;
    case 'revision.status_changed':
      return (
        `${revision[0]!.toUpperCase()}${revision.slice(1)}: ${d.from} ` +
        `→ ${d.to}.${str(d.status_message) ? ` ${d.status_message}` : ''}`
      );
    case 'domain.state_changed':
      return `Domain ${d.host} of deployment ${e.deployment_id}: ${d.from} → ${d.to}.${str(d.error) ? ` ${d.error}` : ''}`;
    case 'preview.created':
      return `Preview ${deployment} of pull request #${d.number} created.`;
    case 'preview.deleted':
      return `Preview ${deployment} of pull request #${d.number} deleted (${d.reason}).`;
    case 'preview.feedback_failed':
      return (
        `Preview ${deployment}: the forge refused its ${d.state} status for pull request #${d.number} ` +
        `(attempt ${d.attempt}${d.given_up ? ', given up' : ''}): ${d.error}`
      );
    case 'webhook.test':
      return `Test delivery for webhook ${d.webhook_id}, sent by ${d.requested_by}.`;
    default:
      return `${e.type} for deployment ${e.deployment_id}.`;
  }
}

/**
 * Text made inert for Slack's mrkdwn: `&`, `<` and `>` are the only characters Slack requires
 * escaped, and the only ones that make control sequences (`<!channel>`, `<https://x|link>`,
 * `<@U123>`). Everything a user controls (names, status messages) passes through here.
 */
export function escapeSlackText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/**
 * The body of a `slack` format delivery: what a Slack incoming webhook (and the Slack-compatible
 * endpoints of Mattermost, Rocket.Chat, Discord's `/slack` URLs) accepts. The whole line is
 * escaped: our own wording holds none of `&<>`, so only user-controlled text changes.
 */
export function slackMessage(e: PublicEvent): { text: string } {
  return { text: `[Slipway] ${escapeSlackText(describeEvent(e))}` };
}

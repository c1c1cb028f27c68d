import type { Revision, RevisionTrigger } from '../api/types';
import { short } from './common';

/** Why a revision exists, in words (its `trigger`). */
export const TRIGGER_WORDS: Record<RevisionTrigger, string> = {
  create: 'Created with the deployment',
  patch: 'Settings changed',
  push: 'Pushed to the tracked branch',
  upload: 'Source uploaded (deploy CLI)',
  image_push: 'Image pushed (deploy CLI)',
  redeploy: 'Rolled back',
  preview: 'Pull request preview',
  api_revision: 'New revision through the API',
};

/** Who made it: the key's description, the user's name, or what set Slipway off. */
export function actorWords(actor: Revision['created_by']): string | null {
  if (!actor) return null;
  if (actor.kind === 'api_key') return `key ${actor.name ? `“${actor.name}”` : short(actor.id ?? '')}`;
  if (actor.kind === 'user') return actor.name ?? actor.id;
  return actor.name ? `Slipway (${actor.name})` : 'Slipway';
}

/**
 * A revision's story in one or two lines: why it exists and who made it, and the commit it built
 * (short sha, the message's first line, its author), where the API knows them.
 */
export function RevisionStory({ revision }: { revision: Revision }) {
  const config = revision.source_revision_config;
  const sha = config.repo_commit_sha;
  const message = config.repo_commit_message?.split('\n')[0] ?? null;
  const who = actorWords(revision.created_by);
  if (!revision.trigger && !sha) return null;
  return (
    <p className="revision-story">
      {revision.trigger && (
        <span className="trigger" data-trigger={revision.trigger}>
          {TRIGGER_WORDS[revision.trigger] ?? revision.trigger}
          {who && <> by {who}</>}
        </span>
      )}
      {sha && (
        <span className="commit" title={config.repo_commit_message ?? undefined}>
          {' '}
          · commit <code>{sha.slice(0, 10)}</code>
          {message && <> “{message}”</>}
          {config.repo_commit_author && <> by {config.repo_commit_author}</>}
        </span>
      )}
    </p>
  );
}

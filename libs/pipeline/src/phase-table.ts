import { controlPlaneSettings } from '@slipway/config';
import { PHASES, phaseNamed, type Phase } from './phases.js';

const code = (items: readonly string[]) => items.map((item) => `\`${item}\``).join(', ');

/** Who ends a phase well: the worker of its job, or (the enqueue phase) the relay's hand-off. */
function success(phase: Phase): string {
  if (!phase.job) {
    const entries = PHASES.filter((p) => p.job).map((p) => p.entry);
    return `${code(entries)}: the relay, as it hands the first job to Redis (\`RevisionFlow.onHandOff\`)`;
  }
  const then = phase.next ? phaseNamed(phase.next).job : null;
  const follows = then ? `, recording \`${then}\` in the same transaction` : ' (the deployment now serves it)';
  return `\`${phase.onSuccess}\`: \`RevisionFlow.complete('${phase.name}')\`${follows}`;
}

/**
 * The "who moves a revision" table of docs/architecture.md, rendered from `PHASES`: the doc shows
 * what decides, so it cannot drift from it (phase-table.test.ts compares the two).
 */
export function phaseTableMarkdown(): string {
  const rows = PHASES.map((phase) => {
    const worker = phase.job ? `\`${phase.job}\`` : '— (the outbox relay)';
    const begins = phase.working.length
      ? `\`${phase.entry}\` → \`${phase.working[0]}\`: \`RevisionFlow.begin('${phase.name}')\` (\`beginAll\`: several in one statement)`
      : `created at \`${phase.entry}\`, or \`QUEUED\` behind another`;
    const deadline = `the reconciler past \`${controlPlaneSettings.pipeline[phase.budget].env}\``;
    const failure = phase.job
      ? `\`${phase.onFailure}\`: \`RevisionFlow.fail('${phase.name}')\`, or ${deadline}`
      : `\`${phase.onFailure}\`: ${deadline}`;
    return `| ${phase.name} | ${code(phase.statuses)} | ${worker} | ${begins} | ${success(phase)} | ${failure} |`;
  });
  return [
    '| phase | statuses | worked by | begins | ends well | ends badly |',
    '|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

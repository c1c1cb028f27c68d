/**
 * Why a container's command could not be started at all, from its log: the added init's words
 * (`ERROR (catatonit:1): failed to exec pid1: No such file or directory`) or runc's own, when the image brings its init
 * (`exec /sbin/tini: no such file or directory` from the container's init after the start, or
 * `unable to start container process: exec: …` from `runc run`). Such a start can never succeed, unlike a crash of a
 * server that started: the rollout fails at once instead of being retried (docs/operations.md, The container runtime).
 */
const CATATONIT_EXEC = /failed to exec pid1: (.+?)\s*$/;
const RUNC_EXEC = new RegExp(
  String.raw`(?:^|unable to start container process: )exec[: ].*?` +
    String.raw`(no such file or directory|permission denied|exec format error|not a directory|is a directory)["\s]*$`,
  'i',
);

/** `The image's command cannot start: <command>: <reason>`, or null when the lines say nothing of the kind. */
export function containerStartFailure(lines: readonly string[], command: readonly string[]): string | null {
  for (const line of [...lines].reverse()) {
    const reason = CATATONIT_EXEC.exec(line)?.[1] ?? RUNC_EXEC.exec(line)?.[1];
    if (!reason) continue;
    const what = command[0] ?? 'the command';
    const hint = /format/i.test(reason) ? ' (a binary for another architecture, or a script without a #! line)' : '';
    return `The image's command cannot start: ${what}: ${reason.toLowerCase()}${hint}.`;
  }
  return null;
}

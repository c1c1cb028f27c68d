/**
 * The git hook that stands in for a repository host's push webhook: a `local` integration's
 * repositories have no host to send it (docs/guide.md, Build on push). It sends GitHub's push
 * payload for the repository it is installed in, signed with the integration's webhook secret
 * (HMAC-SHA256 of the body, `X-Hub-Signature-256`). As `post-commit` it reports the commit just
 * made on the checked-out branch; as `post-receive` (a repository pushed to) each pushed ref.
 * The repository is named by its real path, as the integration lists it (`file://…`).
 *
 * The secret is never an argument of any command the hook runs (other users of the machine can
 * read every process's arguments, in `ps`): it is a shell variable of the hook, handed to perl in
 * its environment, and perl's core Digest::SHA signs the body read from its stdin. Perl is
 * there wherever git is (Debian's git depends on it).
 */
export function localPushHook(name: string, webhookUrl: string, secret: string): string {
  // Both come from the API (an http(s) URL, a base64url secret): nothing in them needs shell quoting but the quotes.
  const quoted = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  return `#!/bin/sh
# Slipway: tells the integration ${JSON.stringify(name)} of new commits, as a repository host's push
# webhook would. Install as .git/hooks/post-commit (commits made here) or hooks/post-receive
# (pushes into this repository), executable. Needs curl and perl (git's own dependency).
# The secret is passed to perl in its environment, never as an argument (seen by all in ps).
WEBHOOK_URL=${quoted(webhookUrl)}
WEBHOOK_SECRET=${quoted(secret)}
repo=$(git rev-parse --show-toplevel 2>/dev/null) || repo=$(cd "$(git rev-parse --git-dir)" && pwd -P)
# The path as a JSON string's contents: backslashes and double quotes escaped.
repo_json=$(printf '%s' "$repo" | sed 's/\\\\/\\\\\\\\/g; s/"/\\\\"/g')
notify() {
  payload=$(printf '{"ref":"%s","after":"%s","repository":{"clone_url":"file://%s","pushed_at":%s}}' "$1" "$2" "$repo_json" "$(date +%s)")
  signature=$(printf '%s' "$payload" | WEBHOOK_SECRET="$WEBHOOK_SECRET" perl -MDigest::SHA=hmac_sha256_hex \\
    -e 'local $/; binmode STDIN; print hmac_sha256_hex(scalar(<STDIN>), $ENV{WEBHOOK_SECRET})') || {
    echo 'slipway: not sent: signing needs perl (with its core Digest::SHA)' >&2
    return 1
  }
  answer=$(curl -sS -X POST "$WEBHOOK_URL" -H 'Content-Type: application/json' -H 'X-GitHub-Event: push' \\
    -H "X-Hub-Signature-256: sha256=$signature" --data-binary "$payload") || answer='not delivered'
  echo "slipway: $answer" >&2
}
case "$(basename "$0")" in
  # A deleted ref (the all-zero sha) has nothing to build.
  post-receive) while read -r old new ref; do case "$new" in *[!0]*) notify "$ref" "$new" ;; esac; done ;;
  *) ref=$(git symbolic-ref -q HEAD) && notify "$ref" "$(git rev-parse HEAD)" ;;
esac
`;
}

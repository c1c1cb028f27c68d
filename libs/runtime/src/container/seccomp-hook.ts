/**
 * The container's seccomp section (OCI `linux.seccomp`). SECCOMP HOOK: the sandbox's syscall
 * policy (`ociSeccomp()` in sandbox/seccomp.ts) is not in this tree yet; once it is, this returns
 * `ociSeccomp()` and every container gets the same filter as a sandboxed process. Until then,
 * containers run without a seccomp filter (no capabilities and no_new_privs still apply).
 */
export function containerSeccomp(): unknown {
  return null;
}

/**
 * What a failed file-system call says, without Node's `, open '/the/path'` (or `, read`) tail: the
 * messages that quote it name the path already. `ENOENT: no such file or directory`.
 */
export function fileErrorDetail(error: unknown): string {
  const detail = error instanceof Error ? error.message : String(error);
  const syscall = (error as { syscall?: unknown } | null)?.syscall;
  if (typeof syscall !== 'string') return detail;
  const tail = detail.lastIndexOf(`, ${syscall}`);
  return tail > 0 ? detail.slice(0, tail) : detail;
}

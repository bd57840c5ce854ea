/** A usage or input problem: printed as one line, exit 2. */
export class UsageError extends Error {}

/** What a proxy does unless told otherwise. */
export const PROXY_DEFAULTS = Object.freeze({
  host: '127.0.0.1',
  /** 0: a free port, which `listen` resolves with. */
  port: 0,
  /** Ms a request may wait for the upstream's quota (its turn in the fair queue included) before a 429. */
  maxWaitMs: 30_000,
  /** The largest request body, bytes (10 MiB). */
  maxBodyBytes: 10 * 1024 * 1024,
  /** Ms an upstream call may take when its provider sets no `callTimeout`. */
  callTimeoutMs: 600_000,
});

// `news-processor/proxy`'s pieces, for the command and for a gateway of one's own: the server, its
// config, where its budgets, buckets and limits live.
export { ProxyServer } from './proxy-server.ts';
export { PROXY_DEFAULTS } from './proxy-defaults.ts';
export type { ProxyServerOptions, ProxyLogLine } from './proxy-server.ts';
export { loadGatewayConfig, parseGatewayConfig } from './gateway-config.ts';
export type { GatewayConfig, GatewayKey, GatewayConfigContext } from './gateway-config.ts';
export { localKeyStores } from './gateway-keys.ts';
export type { KeyStores } from './gateway-keys.ts';
export { FairQueue } from './fair-queue.ts';
export { redisGatewayStores } from './redis-stores.ts';
export { proxyTelemetry } from './proxy-telemetry.ts';

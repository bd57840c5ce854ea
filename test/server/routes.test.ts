import { beforeAll, describe, expect, it } from 'vitest';
import { loadDialects } from '../../src/server/dialects.ts';
import { RouteTable, SERVER_ROUTES } from '../../src/server/routes.ts';
import type { ServeHost } from '../../src/vendors/serve/dialect.ts';

/** A host no handler is called on here: the table is only matched against. */
const HOST = { batches: {} } as unknown as ServeHost;

let table: RouteTable;
/** Azure's API goes by OpenAI's name: it is the one its dialect claims requests with. */
let azureApi: unknown;
beforeAll(async () => {
  const dialects = await loadDialects();
  azureApi = dialects.find(({ type }) => type === 'azure')!.dialect.api;
  table = new RouteTable(
    [...dialects.flatMap(({ dialect }) => dialect.mount(HOST).routes), ...SERVER_ROUTES],
    dialects.map(({ dialect }) => dialect),
  );
});
const match = (method: string, url: string, headers = {}) => table.match(method, url, headers);

describe('RouteTable: the registry’s dialects and the server’s own routes', () => {
  it('finds each route by its method and path, the API it speaks and its metrics label', () => {
    expect(match('POST', '/v1/chat/completions?x=1')).toMatchObject({
      spec: { handle: 'chat' },
      api: expect.objectContaining({ name: 'openai' }),
      label: '/v1/chat/completions',
      id: '',
    });
    expect(match('POST', '/v1/messages')).toMatchObject({ api: expect.objectContaining({ name: 'anthropic' }), label: '/v1/messages' });
    expect(match('GET', '/v1/responses/resp_1')).toMatchObject({
      api: expect.objectContaining({ name: 'responses' }),
      label: '/v1/responses/{id}',
      id: 'resp_1',
    });
    expect(match('GET', '/v1/models/a%2Fb')).toMatchObject({ label: '/v1/models/{id}', id: 'a/b', spec: { handle: 'model' } });
    expect(match('POST', '/openai/deployments/d1/chat/completions?api-version=2024-10-21').api).toBe(azureApi);
    expect(match('POST', '/openai/deployments/d1/chat/completions?api-version=2024-10-21')).toMatchObject({
      id: 'd1',
      spec: { handle: 'chat' },
    });
  });

  it('finds an id that is not the last segment, and tells the routes of one path apart by method', () => {
    expect(match('POST', '/v1/batches/batch_1/cancel')).toMatchObject({
      label: '/v1/batches/{id}/cancel',
      id: 'batch_1',
      api: expect.objectContaining({ name: 'openai' }),
    });
    expect(match('GET', '/v1/messages/batches/msgbatch_1/results')).toMatchObject({
      label: '/v1/messages/batches/{id}/results',
      id: 'msgbatch_1',
      api: expect.objectContaining({ name: 'anthropic' }),
    });
    expect(match('GET', '/v1/messages/batches')).toMatchObject({ label: '/v1/messages/batches', id: '' });
    expect(match('DELETE', '/v1/files/file-1').spec).toMatchObject({ method: 'DELETE', path: '/v1/files/{id}' });
    expect(match('GET', '/v1/files/file-1').spec).toMatchObject({ method: 'GET', path: '/v1/files/{id}' });
    expect(match('GET', '/v1/batches//cancel').spec).toBeUndefined();
  });

  it('tells the API of a request outside the vendors’ routes by the key’s header, else speaks the first vendor’s', () => {
    expect(match('GET', '/v1/models').api.name).toBe('openai');
    expect(match('GET', '/v1/models', { 'x-api-key': 'k' }).api.name).toBe('anthropic');
    expect(match('GET', '/nowhere', { 'anthropic-version': '2023-06-01' }).api.name).toBe('anthropic');
    expect(match('GET', '/nowhere', { 'api-key': 'k' }).api).toBe(azureApi);
  });

  it('matches no route for another method, an unknown path, an empty id, a malformed escape or a missing required query (a 404, not a crash)', () => {
    for (const [method, url] of [
      ['GET', '/v1/chat/completions'],
      ['POST', '/v1/chat'],
      ['GET', '/v1/models/'],
      ['GET', '/v1/models/%E0%A4%A'],
      ['DELETE', '/v1/responses/r1'],
      ['POST', '/openai/deployments/d1/chat/completions'],
    ] as const) {
      expect(match(method, url), `${method} ${url}`).toMatchObject({ spec: undefined, label: 'unknown' });
    }
  });

  it('writes each route once: no two routes share a method and a path', () => {
    const keys = table.routes.map((spec) => `${spec.method} ${spec.path}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(() => new RouteTable(SERVER_ROUTES, [])).toThrow(TypeError);
  });
});

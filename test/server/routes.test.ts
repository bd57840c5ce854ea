import { describe, expect, it } from 'vitest';
import { anthropicApi } from '../../src/server/anthropic-api.ts';
import { openAiApi } from '../../src/server/openai-api.ts';
import { responsesApi } from '../../src/server/responses-api.ts';
import { matchRoute, ROUTES } from '../../src/server/routes.ts';

describe('matchRoute()', () => {
  it('finds each route of the table by its method and path, the API it speaks and its metrics label', () => {
    expect(matchRoute('POST', '/v1/chat/completions?x=1', {})).toMatchObject({
      spec: ROUTES[0],
      api: openAiApi,
      label: '/v1/chat/completions',
      id: '',
    });
    expect(matchRoute('POST', '/v1/messages', {})).toMatchObject({ api: anthropicApi, label: '/v1/messages' });
    expect(matchRoute('GET', '/v1/responses/resp_1', {})).toMatchObject({ api: responsesApi, label: '/v1/responses/{id}', id: 'resp_1' });
    expect(matchRoute('GET', '/v1/models/a%2Fb', {})).toMatchObject({ label: '/v1/models/{id}', id: 'a/b' });
  });

  it('finds an id that is not the last segment, and tells the routes of one path apart by method', () => {
    expect(matchRoute('POST', '/v1/batches/batch_1/cancel', {})).toMatchObject({
      label: '/v1/batches/{id}/cancel',
      id: 'batch_1',
      api: openAiApi,
    });
    expect(matchRoute('GET', '/v1/messages/batches/msgbatch_1/results', {})).toMatchObject({
      label: '/v1/messages/batches/{id}/results',
      id: 'msgbatch_1',
      api: anthropicApi,
    });
    expect(matchRoute('GET', '/v1/messages/batches', {})).toMatchObject({ label: '/v1/messages/batches', id: '' });
    expect(matchRoute('DELETE', '/v1/files/file-1', {}).spec?.handler).toBe('delete-file');
    expect(matchRoute('GET', '/v1/files/file-1', {}).spec?.handler).toBe('file');
    expect(matchRoute('GET', '/v1/batches//cancel', {}).spec).toBeUndefined();
  });

  it('tells the API of a route that speaks both by the headers: Anthropic’s name their key or version', () => {
    expect(matchRoute('GET', '/v1/models', {}).api).toBe(openAiApi);
    expect(matchRoute('GET', '/v1/models', { 'x-api-key': 'k' }).api).toBe(anthropicApi);
    expect(matchRoute('GET', '/nowhere', { 'anthropic-version': '2023-06-01' }).api).toBe(anthropicApi);
  });

  it('matches no route for another method, an unknown path, an empty id or a malformed escape (a 404, not a crash)', () => {
    for (const [method, url] of [
      ['GET', '/v1/chat/completions'],
      ['POST', '/v1/chat'],
      ['GET', '/v1/models/'],
      ['GET', '/v1/models/%E0%A4%A'],
      ['DELETE', '/v1/responses/r1'],
    ] as const) {
      expect(matchRoute(method, url, {}), `${method} ${url}`).toMatchObject({ spec: undefined, label: 'unknown' });
    }
  });
});

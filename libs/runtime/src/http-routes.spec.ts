import { describe, expect, it } from '@jest/globals';
import { checkRoutes, matchRoute, type HttpRoute } from './http-routes.js';

const route = (prefix: string): HttpRoute => ({ prefix, handle: () => Promise.resolve() });

describe('matchRoute', () => {
  const routes = [route('/v1/'), route('/mcp')];

  it('matches a trailing-slash prefix as a folder and a bare prefix as a path or its folder', () => {
    expect(matchRoute(routes, '/v1/chat/completions?stream=1')?.prefix).toBe('/v1/');
    expect(matchRoute(routes, '/v1')).toBeUndefined();
    expect(matchRoute(routes, '/mcp')?.prefix).toBe('/mcp');
    expect(matchRoute(routes, '/mcp?x=1')?.prefix).toBe('/mcp');
    expect(matchRoute(routes, '/mcp/extra')?.prefix).toBe('/mcp');
    expect(matchRoute(routes, '/mcpx')).toBeUndefined();
  });

  it('never matches the gRPC paths', () => {
    expect(matchRoute(routes, '/engram.retrieval.v1.RetrievalService/Search')).toBeUndefined();
    expect(matchRoute(routes, '/grpc.health.v1.Health/Check')).toBeUndefined();
  });
});

describe('checkRoutes', () => {
  it('refuses overlapping prefixes and prefixes that could shadow an RPC path', () => {
    expect(() => {
      checkRoutes([route('/v1/'), route('/v1/chat/')]);
    }).toThrow(/overlap/);
    expect(() => {
      checkRoutes([route('/mcp'), route('/mcp/')]);
    }).toThrow(/overlap/);
    expect(() => {
      checkRoutes([route('/engram.retrieval.v1.RetrievalService/')]);
    }).toThrow(/lower-case segment/);
    expect(() => {
      checkRoutes([route('v1/')]);
    }).toThrow(/must start/);
    expect(() => {
      checkRoutes([route('/v1/'), route('/mcp')]);
    }).not.toThrow();
  });
});

import { useEffect, useState } from 'react';

/** Where the Studio is: `#/memories/01J…?status=ACTIVE` → view `memories`, rest `['01J…']`. */
export interface Route {
  readonly view: string;
  readonly rest: readonly string[];
  readonly query: URLSearchParams;
}

/** The props every view gets: where it is (the rest of the hash path and its query). */
export interface ViewProps {
  readonly route: Route;
}

/** Parses a location hash (`#/view/a/b?x=1`); an empty hash is the memories view. */
export function parseRoute(hash: string): Route {
  const body = hash.replace(/^#\/?/, '');
  const [path = '', search = ''] = body.split('?', 2);
  const segments = path
    .split('/')
    .filter((s) => s !== '')
    .map((s) => decodeURIComponent(s));
  return { view: segments[0] ?? 'memories', rest: segments.slice(1), query: new URLSearchParams(search) };
}

/** The hash of a view, path segments and query: `routeHash('memories', ['01J'])` → `#/memories/01J`. */
export function routeHash(
  view: string,
  rest: readonly string[] = [],
  query: Readonly<Record<string, string | undefined>> = {},
): string {
  const path = [view, ...rest].map((s) => encodeURIComponent(s)).join('/');
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') params.set(k, v);
  const search = params.toString();
  return `#/${path}${search === '' ? '' : `?${search}`}`;
}

/** Goes to a hash made by {@link routeHash}. */
export function navigate(hash: string): void {
  globalThis.location.hash = hash;
}

/** The current route, updated on every hash change. */
export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(globalThis.location.hash));
  useEffect(() => {
    const update = () => setRoute(parseRoute(globalThis.location.hash));
    globalThis.addEventListener('hashchange', update);
    return () => globalThis.removeEventListener('hashchange', update);
  }, []);
  return route;
}

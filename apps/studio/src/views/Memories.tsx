import type { ViewProps } from '../lib/route.js';
import { MemoryDetail } from './memories/MemoryDetail.js';
import { MemoryListPage } from './memories/MemoryList.js';
import './memories.css';

/** `#/memories` (list, filters, Remember) and `#/memories/<id>` (one memory and its history). */
export function MemoriesView({ route }: ViewProps) {
  const id = route.rest[0];
  if (id !== undefined && id !== '') return <MemoryDetail key={id} id={id} />;
  return <MemoryListPage query={route.query} />;
}

import { timestampDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import type { Lang } from './lang.js';

/** The name of a protobuf-es enum value (`MemoryStatus.ACTIVE` → `ACTIVE`), `—` for 0/unknown. */
export function enumName(enumObject: Readonly<Record<number, string>>, value: number): string {
  if (value === 0) return '—';
  return enumObject[value] ?? String(value);
}

/** A timestamp as a local date and time (`2026-12-02 01:45`), `—` when absent. */
export function formatTime(at: Timestamp | Date | number | undefined, lang: Lang): string {
  if (at === undefined) return '—';
  const date = at instanceof Date ? at : typeof at === 'number' ? new Date(at) : timestampDate(at);
  if (Number.isNaN(date.getTime())) return '—';
  return date.toLocaleString(lang === 'zh' ? 'zh-CN' : 'en-GB', {
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
  });
}

/** How long ago `at` was, relative to `now` (`3 min ago`, `3 分钟前`). */
export function formatAgo(at: Timestamp | Date | number | undefined, lang: Lang, now = Date.now()): string {
  if (at === undefined) return '—';
  const date = at instanceof Date ? at : typeof at === 'number' ? new Date(at) : timestampDate(at);
  const seconds = Math.round((date.getTime() - now) / 1000);
  const rtf = new Intl.RelativeTimeFormat(lang === 'zh' ? 'zh-CN' : 'en', { numeric: 'auto' });
  const abs = Math.abs(seconds);
  if (abs < 60) return rtf.format(seconds, 'second');
  if (abs < 3600) return rtf.format(Math.round(seconds / 60), 'minute');
  if (abs < 86_400) return rtf.format(Math.round(seconds / 3600), 'hour');
  return rtf.format(Math.round(seconds / 86_400), 'day');
}

/** A byte count in binary units (`1.5 KiB`). */
export function formatBytes(bytes: number | bigint): string {
  let n = Number(bytes);
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let unit = 0;
  while (n >= 1024 && unit < units.length - 1) {
    n /= 1024;
    unit += 1;
  }
  return `${unit === 0 ? String(n) : n.toFixed(n >= 10 ? 0 : 1)} ${units[unit] ?? 'B'}`;
}

/** A score in [0, 1] (or any small real) with three decimals. */
export function formatScore(score: number): string {
  return Number.isFinite(score) ? score.toFixed(3) : '—';
}

/** A count with the language's digit grouping. */
export function formatCount(n: number | bigint, lang: Lang): string {
  return Number(n).toLocaleString(lang === 'zh' ? 'zh-CN' : 'en');
}

/** The last segment of a resource name (`memories/01J…` → `01J…`). */
export function shortName(name: string): string {
  return name.slice(name.lastIndexOf('/') + 1);
}

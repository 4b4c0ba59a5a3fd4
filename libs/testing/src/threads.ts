import { readdirSync, readFileSync } from 'node:fs';

/**
 * The nice value of each thread of this process, by thread id (Linux: field 19 of
 * `/proc/self/task/<tid>/stat`); the main thread's id is the pid. For the tests of per-thread
 * scheduling priorities (decision 0047).
 */
export function threadNiceness(): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended meanwhile
    }
    // After "pid (comm) " come the fields from the state (3) on; nice is field 19.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out.set(Number(tid), Number(fields[16]));
  }
  return out;
}

/** The nice values of the threads in `after` that were not in `before` (threads started meanwhile). */
export function startedThreadNiceness(
  before: ReadonlyMap<number, number>,
  after: ReadonlyMap<number, number>,
): number[] {
  return [...after].filter(([tid]) => !before.has(tid)).map(([, nice]) => nice);
}

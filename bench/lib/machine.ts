/**
 * Where and how a benchmark ran, for its report: the commit, the machine, the load average, and the
 * memory of this process and of the others it measures (Linux `/proc`).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import os from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RunningQdrant } from '@engram/testing';

const WORKSPACE = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const round1 = (x: number) => Math.round(x * 10) / 10;

/** The short hash of the checked-out commit, or `unknown` outside a git checkout. */
export function gitCommit(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: WORKSPACE, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

/** CPUs, CPU model, memory (GiB), platform and Node version. */
export function machine() {
  const cpus = os.cpus();
  return {
    cpus: cpus.length,
    cpuModel: cpus[0]?.model ?? 'unknown',
    totalMemoryGiB: round1(os.totalmem() / 1024 ** 3),
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    node: process.version,
  };
}

/** The 1, 5 and 15 minute load averages, to 0.01. */
export function loadAverage(): number[] {
  return os.loadavg().map((x) => Math.round(x * 100) / 100);
}

/** Peak RSS of this process so far, MiB (`ru_maxrss` is KiB on Linux). */
export function peakRssMib(): number {
  return round1(process.resourceUsage().maxRSS / 1024);
}

/** VmRSS and VmHWM (peak) of a process, in MiB, from /proc/<pid>/status. */
export function processRss(pid: number | undefined): { rssMib: number; peakRssMib: number } | undefined {
  if (pid === undefined) return undefined;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
    return { rssMib: round1(kib('VmRSS') / 1024), peakRssMib: round1(kib('VmHWM') / 1024) };
  } catch {
    return undefined;
  }
}

/** The Qdrant server's pid: `startQdrant` does not expose it; its working directory is the server's. */
export function qdrantPid(qdrant: RunningQdrant): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/cwd`) === qdrant.dir) return Number(entry);
    } catch {
      // not ours, or gone
    }
  }
  return undefined;
}

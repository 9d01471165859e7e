/**
 * `npx tsx bench/lib/cpuprofile-summary.ts <file.cpuprofile>... [--top 25] [--functions 25]`: where a profiled
 * process spent its CPU, by self time. Each profile (one per thread: the worker's main thread and its workflow
 * threads each write one with `BENCH_WORKER_NODE_FLAGS='--cpu-prof --cpu-prof-dir=/tmp/prof'`) is summed by the
 * package or source directory a function lives in (node_modules/<package>, our activities/, src/..., node: internals,
 * and V8's own (program), (garbage collector), (idle)), then by function. Percentages are of the busy time (idle
 * left out). `--window <from>:<to>` keeps the samples from..to seconds after each profile's start (a throughput
 * phase alone, found with `--timeline`, which prints the busy milliseconds of every 5 s).
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

interface ProfileNode {
  id: number;
  children?: number[];
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** The package (node_modules/@scope/name) or our top directory (src/db, activities, workflows) of a script URL. */
export function moduleOf(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native or builtin)';
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  const path = url.replace(/^file:\/\//, '');
  const modules = path.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const [first, second] = path.slice(modules + '/node_modules/'.length).split('/');
    return first?.startsWith('@') ? `${first}/${second}` : (first ?? path);
  }
  const ours = /\/(?:dist\/)?(src\/[^/]+|activities|workflows|bench|bin)\//.exec(path);
  if (ours) return ours[1]!;
  // The workflow bundle (one file, webpack's): everything the workflow threads run of ours and the SDK's.
  if (path.includes('workflow-bundle') || /workflows\.js$/.test(path)) return '(workflow bundle)';
  return basename(path);
}

export interface ProfileSummary {
  file: string;
  totalMs: number;
  idleMs: number;
  byModule: Map<string, number>;
  byFunction: Map<string, number>;
  /** Total (self + callees) time of the samples with the module anywhere on their stack. */
  inclusiveByModule: Map<string, number>;
}

export function summarise(
  file: string,
  profile: CpuProfile,
  window: { fromS: number; toS: number } = { fromS: 0, toS: Infinity },
): ProfileSummary & { timeline: number[] } {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const parents = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
  const selfMs = new Map<number, number>();
  const timeline: number[] = [];
  let atUs = 0;
  profile.samples.forEach((id, i) => {
    const deltaUs = profile.timeDeltas[i] ?? 0;
    atUs += deltaUs;
    const atS = atUs / 1e6;
    if (nodes.get(id)!.callFrame.functionName !== '(idle)') {
      const bucket = Math.floor(atS / 5);
      while (timeline.length <= bucket) timeline.push(0);
      timeline[bucket]! += deltaUs / 1000;
    }
    if (atS < window.fromS || atS >= window.toS) return;
    selfMs.set(id, (selfMs.get(id) ?? 0) + deltaUs / 1000);
  });
  const byModule = new Map<string, number>();
  const byFunction = new Map<string, number>();
  const inclusiveByModule = new Map<string, number>();
  let idleMs = 0;
  let totalMs = 0;
  for (const [id, ms] of selfMs) {
    const { functionName, url, lineNumber } = nodes.get(id)!.callFrame;
    totalMs += ms;
    if (functionName === '(idle)') {
      idleMs += ms;
      continue;
    }
    const module = moduleOf(url, functionName);
    byModule.set(module, (byModule.get(module) ?? 0) + ms);
    const where = url ? `${basename(url)}:${lineNumber + 1}` : '';
    const fn = `${functionName || '(anonymous)'} ${where} [${module}]`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + ms);
    const onStack = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parents.get(at)) {
      const frame = nodes.get(at)!.callFrame;
      if (frame.url) onStack.add(moduleOf(frame.url, frame.functionName));
    }
    for (const name of onStack) inclusiveByModule.set(name, (inclusiveByModule.get(name) ?? 0) + ms);
  }
  return { file, totalMs, idleMs, byModule, byFunction, inclusiveByModule, timeline };
}

function table(rows: Map<string, number>, busyMs: number, top: number): string {
  return [...rows.entries()]
    .sort(([, a], [, b]) => b - a)
    .slice(0, top)
    .map(([name, ms]) => `${ms.toFixed(0).padStart(8)} ms ${((100 * ms) / busyMs).toFixed(1).padStart(5)} %  ${name}`)
    .join('\n');
}

function merge(into: Map<string, number>, from: Map<string, number>): void {
  for (const [key, ms] of from) into.set(key, (into.get(key) ?? 0) + ms);
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('cpuprofile-summary.ts')) {
  const args = process.argv.slice(2);
  const flag = (name: string, fallback: number) => {
    const at = args.indexOf(name);
    if (at < 0) return fallback;
    const [, value] = args.splice(at, 2);
    return Number(value);
  };
  const top = flag('--top', 25);
  const functions = flag('--functions', 25);
  const showTimeline = args.includes('--timeline') && args.splice(args.indexOf('--timeline'), 1).length > 0;
  const windowAt = args.indexOf('--window');
  const [fromS, toS] = windowAt >= 0 ? args.splice(windowAt, 2)[1]!.split(':').map(Number) : [0, Infinity];
  const window = { fromS: fromS ?? 0, toS: toS ?? Infinity };
  const all = { byModule: new Map<string, number>(), byFunction: new Map<string, number>(), busyMs: 0 };
  for (const file of args) {
    const summary = summarise(file, JSON.parse(readFileSync(file, 'utf8')) as CpuProfile, window);
    const busyMs = summary.totalMs - summary.idleMs;
    console.log(`\n== ${basename(file)}: ${busyMs.toFixed(0)} ms busy of ${summary.totalMs.toFixed(0)} ms sampled`);
    if (showTimeline)
      console.log(`busy ms per 5 s: ${summary.timeline.map((ms, i) => `${i * 5}s:${ms.toFixed(0)}`).join(' ')}`);
    console.log(table(summary.byModule, busyMs, top));
    console.log(`-- inclusive (the module anywhere on the stack):`);
    console.log(table(summary.inclusiveByModule, busyMs, top));
    merge(all.byModule, summary.byModule);
    merge(all.byFunction, summary.byFunction);
    all.busyMs += busyMs;
  }
  if (args.length > 1) {
    console.log(`\n== all ${args.length} profiles: ${all.busyMs.toFixed(0)} ms busy`);
    console.log(table(all.byModule, all.busyMs, top));
  }
  console.log(`\n== top functions by self time`);
  console.log(table(all.byFunction, all.busyMs, functions));
}

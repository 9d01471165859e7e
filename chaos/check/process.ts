import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import type { ConductorReport } from '../conductor.js';
import type { Operation } from '../driver.js';
import type { UnexpectedExit } from '../worker-process.js';
import type { NoticeLog } from '../world.js';
import { invariant, TOKEN_PATTERN, type InvariantResult } from './invariant.js';

/** Every operation the run asked for ended in an outcome that is right for it. */
export function checkOperations(operations: Operation[], reasons: Map<string, string>): InvariantResult {
  const result = invariant('every operation finished as expected');
  for (const op of operations) {
    result.checked += 1;
    if (op.accepted.includes(op.outcome)) continue;
    const live = [...reasons.entries()].find(([id]) => id.startsWith(`${op.workflowId}/`))?.[1];
    result.violations.push(
      `${op.kind} ${op.workflowId}: ${op.outcome}${op.detail ? ` (${op.detail})` : ''}${live ? ` — ${live}` : ''}`,
    );
  }
  return result;
}

/** The captured worker output (every start, every crash) holds no token; `svsk_[redacted]` is fine. */
export function checkWorkerLog(logFiles: string[]): InvariantResult {
  const result = invariant('no token in the worker logs');
  for (const logFile of logFiles) {
    const lines = readFileSync(logFile, 'utf8').split('\n');
    lines.forEach((line, i) => {
      result.checked += 1;
      if (TOKEN_PATTERN.test(line))
        result.violations.push(
          `${basename(logFile)} line ${i + 1}: ${line.replace(/svsk_[A-Za-z0-9]+/g, 'svsk_<TOKEN>').slice(0, 200)}`,
        );
    });
  }
  return result;
}

/** The notify deployer tells the parent ids and fingerprints, signed, never the token. */
export function checkNotices(notices: NoticeLog): InvariantResult {
  const result = invariant('rotation notices signed, no token');
  for (const notice of notices.received) {
    result.checked += 1;
    if (!notice.signatureValid)
      result.violations.push(`${notice.event} notice with a bad signature: ${notice.body.slice(0, 120)}`);
    if (TOKEN_PATTERN.test(notice.body)) result.violations.push(`${notice.event} notice carries a token`);
  }
  return result;
}

/** The worker only ever stops when the run kills it: a DB restart or a fault must not crash it. */
export function checkWorkerExits(starts: number, exits: UnexpectedExit[]): InvariantResult {
  const result = invariant('worker exits only when killed');
  result.checked = starts;
  for (const exit of exits) {
    result.violations.push(`${exit.at}: exit code ${exit.code}, signal ${exit.signal}: ${crashSummary(exit.tail)}`);
  }
  return result;
}

/** The run is only evidence if the chaos really happened. */
export function checkChaosApplied(report: ConductorReport): InvariantResult {
  const result = invariant('every planned chaos event applied');
  result.checked = report.fired.length + report.skipped.length;
  result.violations.push(...report.skipped);
  return result;
}

/** The thrown error and where Node says it was emitted, out of the interleaved SDK output. */
function crashSummary(tail: string): string {
  const lines = tail.split('\n').map((l) => l.trim());
  const error = lines.find((l) => /^[A-Za-z]*Error\b.*:/.test(l));
  const emitted = lines.find((l) => l.startsWith('Emitted ') || l.includes('Unhandled'));
  return [error, emitted].filter(Boolean).join(' — ') || lines.filter(Boolean).slice(-2).join(' | ').slice(0, 300);
}

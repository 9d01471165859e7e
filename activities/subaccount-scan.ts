import { Context } from '@temporalio/activity';
import type { PageToken, PlatformClient, SubaccountRecord } from '../src/platform/index.js';
import { activityFailure } from './failures.js';
import { FailureCode } from '../src/domain/failures.js';

/**
 * The find-by-external-ref after an ambiguous create. The contract shows no filter on the sub-account
 * list, so it is a scan, and it has no page cap a large fleet could reach (a platform that pages two at
 * a time and ignores `limit` needs 5,000 pages for 10,000 tenants). It stops at the first live match.
 *
 * As a regular activity it heartbeats after every page with the next page's token: a retried attempt
 * (worker crash, heartbeat timeout, a 5xx storm) continues where the last one stopped instead of from
 * the first page. Only a cursor repeated within one attempt (a platform looping) stops it for good.
 */
export interface ScanProgress {
  next: PageToken | null;
  pagesScanned: number;
}

export interface ScanResult {
  match: SubaccountRecord | undefined;
  pagesScanned: number;
  /** Every listed sub-account lacked an externalRef: the scan cannot see refs at all. */
  refsNotShown: boolean;
}

export async function scanForExternalRef(
  platform: Pick<PlatformClient, 'listSubaccountsPage'>,
  externalRef: string,
  resume: { from?: ScanProgress | undefined; onPage?: (progress: ScanProgress) => void; signal?: AbortSignal } = {},
): Promise<ScanResult> {
  let page: PageToken | null | undefined = resume.from?.next ?? undefined;
  let pagesScanned = resume.from?.pagesScanned ?? 0;
  let sawRef = false;
  let sawAny = false;
  const seen = new Set<string>();
  for (;;) {
    const result = await platform.listSubaccountsPage({
      page: page ?? undefined,
      ...(resume.signal ? { signal: resume.signal } : {}),
    });
    pagesScanned += 1;
    for (const s of result.subaccounts) {
      sawAny = true;
      if (s.externalRef !== undefined) sawRef = true;
      if (s.externalRef === externalRef && s.status !== 'closed')
        return { match: s, pagesScanned, refsNotShown: false };
    }
    if (result.next === null) return { match: undefined, pagesScanned, refsNotShown: sawAny && !sawRef };
    const key = result.next.kind === 'cursor' ? `c:${result.next.cursor}` : `u:${result.next.url}`;
    if (seen.has(key)) {
      throw activityFailure(
        FailureCode.PAGINATION_LOOP,
        `the platform named the same next page twice after ${pagesScanned} pages of sub-accounts; stopping the scan`,
      );
    }
    seen.add(key);
    page = result.next;
    resume.onPage?.({ next: page, pagesScanned });
  }
}

/** The scan inside a regular activity: resumes from the last heartbeat, heartbeats every page. */
export function scanInActivity(
  platform: Pick<PlatformClient, 'listSubaccountsPage'>,
  externalRef: string,
): Promise<ScanResult> {
  const ctx = Context.current();
  const from = ctx.info.heartbeatDetails as ScanProgress | undefined;
  return scanForExternalRef(platform, externalRef, {
    from,
    onPage: (progress) => ctx.heartbeat(progress),
    signal: ctx.cancellationSignal,
  });
}

import { afterEach, describe, expect, it } from 'vitest';
import { scanForExternalRef, type ScanProgress } from '../../activities/subaccount-scan.js';
import { createPlatformClient } from '../../src/platform/index.js';
import { sendData, startScriptedServer, type ScriptedServer } from '../harness/scripted-server.js';

/** A platform listing `total` tenants two to a page whatever limit is asked, cursors `p<n>`; `ref-<i>` each. */
let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function twoPerPage(total: number, statusOf: (i: number) => string = () => 'enabled') {
  server = await startScriptedServer((req, res) => {
    const page = Number(new URL(req.url, 'http://x').searchParams.get('cursor')?.slice(1) ?? '0');
    const items = [2 * page, 2 * page + 1]
      .filter((i) => i < total)
      .map((i) => ({ id: `sub_${i}`, externalRef: `ref-${i}`, status: statusOf(i) }));
    sendData(res, 200, { items, nextCursor: 2 * page + 2 < total ? `p${page + 1}` : null });
  });
  return createPlatformClient({ baseUrl: server.apiBase, platformKey: 'svpk_parentSecretValue123', pageSize: 100 });
}

describe('the find-by-external-ref scan', () => {
  it('pages past any small cap to the end of the list and stops at the first match', async () => {
    const client = await twoPerPage(1_000);
    const found = await scanForExternalRef(client, 'ref-999');
    expect(found).toMatchObject({ match: { id: 'sub_999' }, pagesScanned: 500 });
    const early = await scanForExternalRef(client, 'ref-3');
    expect(early).toMatchObject({ match: { id: 'sub_3' }, pagesScanned: 2 });
    expect(await scanForExternalRef(client, 'nobody')).toMatchObject({ match: undefined, pagesScanned: 500 });
  });

  it("continues from a saved cursor (an earlier attempt's heartbeat) instead of the first page", async () => {
    const client = await twoPerPage(100);
    const progress: ScanProgress[] = [];
    await scanForExternalRef(client, 'ref-21', { onPage: (p) => progress.push(p) });
    const saved = progress.at(-1)!;
    expect(saved).toEqual({ next: { kind: 'cursor', param: 'cursor', cursor: 'p10' }, pagesScanned: 10 });
    const requestsBefore = server!.requests.length;
    const resumed = await scanForExternalRef(client, 'ref-99', { from: saved });
    expect(resumed).toMatchObject({ match: { id: 'sub_99' }, pagesScanned: 50 });
    expect(server!.requests.length - requestsBefore).toBe(40);
    expect(server!.requests.at(requestsBefore)!.url).toContain('cursor=p10');
  });

  it('skips a closed tenant carrying the ref', async () => {
    const client = await twoPerPage(10, (i) => (i === 4 ? 'closed' : 'enabled'));
    expect((await scanForExternalRef(client, 'ref-4')).match).toBeUndefined();
  });

  it('stops on a platform that names the same next page twice', async () => {
    server = await startScriptedServer((_req, res) =>
      sendData(res, 200, { items: [{ id: 'sub_1', externalRef: 'a' }], nextCursor: 'again' }),
    );
    const client = createPlatformClient({ baseUrl: server.apiBase, platformKey: 'svpk_parentSecretValue123' });
    await expect(scanForExternalRef(client, 'zzz')).rejects.toMatchObject({
      type: 'PAGINATION_LOOP',
      nonRetryable: true,
    });
  });
});

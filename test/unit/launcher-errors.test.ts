import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LauncherError, LauncherErrorCode } from '../../src/infra/launcher-error.js';
import { startTemporalDevServer } from '../../src/infra/temporal-dev-server.js';
import { rejectionOf } from '../harness/failures.js';

/** A Temporal CLI that cannot start is reported in ONE actionable line, its output kept aside. */
const dir = mkdtempSync(join(tmpdir(), 'tenant-orch-launcher-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const failure = (promise: Promise<unknown>) => rejectionOf(promise, LauncherError);

describe('launcher failures', () => {
  it('names a TEMPORAL_CLI_PATH that is not executable, in one line', async () => {
    const file = join(dir, 'not-executable');
    writeFileSync(file, '');
    const error = await failure(startTemporalDevServer({ cliPath: file }));
    expect(error.code).toBe(LauncherErrorCode.TEMPORAL_CLI);
    expect(error.message).toMatch(/^TEMPORAL_CLI_PATH: .* is not an executable file: /);
    expect(error.message).not.toContain('\n');
  });

  it('reports a dev server that exits at once by its last error line, not its whole output', async () => {
    const cli = join(dir, 'temporal');
    writeFileSync(
      cli,
      '#!/bin/sh\necho "starting"\necho "some noise"\necho "Error: unable to open ' +
        'database file: permission denied" >&2\necho "bye"\nexit 1\n',
    );
    chmodSync(cli, 0o755);
    const error = await failure(startTemporalDevServer({ cliPath: cli, port: 0 }));
    expect(error.code).toBe(LauncherErrorCode.TEMPORAL_START_FAILED);
    expect(error.message).not.toContain('\n');
    expect(error.message).toContain('unable to open database file: permission denied');
    expect(error.message).not.toContain('some noise');
    expect(error.detail).toContain('some noise');
  });
});

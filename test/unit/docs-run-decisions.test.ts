import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runDecisionsMarkdown } from '../../src/gateway/http/run-decisions.js';

const page = readFileSync(new URL('../../docs/http-api.md', import.meta.url), 'utf8');

describe('docs/http-api.md, operator decisions', () => {
  it('holds the run decisions table exactly as the code generates it', () => {
    const table = /<!-- run-decisions-table:start -->\n([\s\S]*?)\n<!-- run-decisions-table:end -->/.exec(page)?.[1];
    expect(table).toBe(runDecisionsMarkdown());
  });
});

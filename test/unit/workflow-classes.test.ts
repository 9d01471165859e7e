import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/**
 * A workflow that holds state is one class of its own, as closeTenant's `Close` (docs/architecture.md): what two
 * workflows share is a helper each holds (workflows/keys/key-slot-run.ts: SlotRun, FleetTell), never a base class
 * they extend. No class under workflows/ extends another.
 */
const root = new URL('../../workflows/', import.meta.url);
const files = readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
// `class X extends`, `class X<T extends Y> extends`, over line breaks too; not `<T extends Y>` alone.
const EXTENDS = /\bclass\s+\w+\s*(?:<(?:[^<>]|<[^<>]*>)*>)?\s*extends\b/;

describe('workflow classes', () => {
  it('are found under workflows/', () => {
    expect(files.length).toBeGreaterThan(10);
    expect(files.some((f) => readFileSync(new URL(f, root), 'utf8').includes('class Close'))).toBe(true);
  });

  it.each(files)('%s: no class extends another', (file) => {
    const source = readFileSync(new URL(file, root), 'utf8');
    expect(source.match(EXTENDS)?.[0] ?? null).toBeNull();
  });
});

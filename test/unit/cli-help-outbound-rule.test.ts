import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { registerEventCommands } from '../../src/cli/commands/events.js';
import { ALLOW_HOSTS_VARIABLE } from '../../src/domain/outbound-rule.js';

/**
 * Issue 45: `tenantctl events subscribe --help` said the rule the server had dropped ("plain http only to
 * localhost"). The server's rule (src/domain/outbound-rule.ts, docs/configuration.md): https to a public
 * address; an inward host (loopback, private, link-local, metadata) only when OUTBOUND_ALLOW_HOSTS lists it,
 * and plain http only to a listed loopback host; checked when the URL is given and at connect, after DNS.
 */
function helpOf(path: string[]): string {
  const program = new Command('tenantctl');
  registerEventCommands(program);
  const command = path.reduce<Command>((parent, name) => parent.commands.find((c) => c.name() === name)!, program);
  // Commander wraps its help to the terminal's width: read it as one line.
  return command.helpInformation().replace(/\s+/g, ' ');
}

describe('events subscribe --help', () => {
  it("states the server's outbound rule for --url, not the old one", () => {
    const help = helpOf(['events', 'subscribe']);
    expect(help).not.toMatch(/only to localhost/);
    expect(help).toContain('https');
    expect(help).toMatch(/loopback, private, link-local (or|and) metadata/);
    expect(help).toContain(ALLOW_HOSTS_VARIABLE);
    expect(help).toContain('after DNS');
    expect(help).toMatch(/plain http only to a loopback host listed/);
  });
});

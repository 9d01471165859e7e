import type { GatewayClient } from '../api-client/gateway-client.js';

/**
 * `tenantctl status <ref>` is one read through the gateway, and most of its time was the gateway's answer after the
 * CLI had loaded (issue 49). So its request goes out as the process starts, and the answer comes while commander and
 * the command definitions load; the command then takes it instead of asking again. Only the plainest form is read
 * early: `status <ref>` with `--json` at most, `--operator-token <token>` (or `=<token>`) before `status`. Any other
 * form, `--help` among them, runs as before. The gateway is opened as the command would open it (openGateway: the
 * same settings, warnings and refusals, made once), and a refusal or a failure is the command's to report: nothing
 * is printed here.
 */
interface EarlyRead {
  path: string;
  token: string | undefined;
  gateway: Promise<GatewayClient>;
  answer: Promise<unknown> | undefined;
  /** The command took the early gateway (its token is the early read's): only then may it take the answer. */
  taken: boolean;
}

let early: EarlyRead | undefined;

/** The request `args` make early: the status path and the token flag, or null for any other form. */
export function earlyStatusRead(args: readonly string[]): { path: string; token: string | undefined } | null {
  let rest = [...args];
  let token: string | undefined;
  if (rest[0] === '--operator-token' && rest.length > 1) [token, rest] = [rest[1], rest.slice(2)];
  else if (rest[0]?.startsWith('--operator-token='))
    [token, rest] = [rest[0].slice('--operator-token='.length), rest.slice(1)];
  if (rest[0] !== 'status') return null;
  const operands = rest.slice(1).filter((arg) => arg !== '--json');
  if (operands.length !== 1 || rest.length - 1 - operands.length > 1) return null;
  const ref = operands[0]!;
  // What the command refuses (segment(): `.`, `..`) or takes for an option is its own to report.
  if (ref.startsWith('-') || ref === '.' || ref === '..' || ref === '') return null;
  return { path: `/v1/tenants/${encodeURIComponent(ref)}`, token };
}

/**
 * Starts the early read when `args` are the plainest `status <ref>`; otherwise does nothing. Settles once the
 * gateway is opened (or refused), the request then on its way, so the caller loads the rest of the CLI while the
 * gateway answers, not before it asks (loaded side by side, the program's modules held the request back).
 */
export async function startEarlyRead(args: readonly string[]): Promise<void> {
  const read = earlyStatusRead(args);
  if (!read) return;
  // Silent: the warnings of openGateway are printed as it runs; a refusal rejects, for the command to report.
  const gateway = openLazily(read.token);
  const answer = gateway.then((client) => client.get(read.path));
  gateway.catch(() => undefined);
  answer.catch(() => undefined);
  early = { ...read, gateway, answer, taken: false };
  await gateway.then(
    () => undefined,
    () => undefined,
  );
}

/** The gateway opened early for this token (once: its warnings and refusals are not made twice), or undefined. */
export function earlyGateway(token: string | undefined): Promise<GatewayClient> | undefined {
  if (!early || early.token !== token) return undefined;
  early.taken = true;
  return early.gateway;
}

/** The gateway for this token: the one opened early, or opened now as openGateway opens it. */
export function gatewayFor(token: string | undefined): Promise<GatewayClient> {
  return earlyGateway(token) ?? openLazily(token);
}

/** openGateway, its module loaded only when a command talks to the gateway. */
function openLazily(token: string | undefined): Promise<GatewayClient> {
  return import('./gateway-access.js').then(({ openGateway }) => openGateway(token));
}

/**
 * The early answer for `path`, taken once, or undefined: no early read, another path, or a command that did not
 * take the early gateway (another token) must ask again.
 */
export function takeEarlyAnswer<T>(path: string): Promise<T> | undefined {
  if (!early?.taken || early.path !== path || !early.answer) return undefined;
  const { answer } = early;
  early.answer = undefined;
  return answer as Promise<T>;
}

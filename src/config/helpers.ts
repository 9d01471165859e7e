import { z } from 'zod';

/**
 * The one set of helpers every area's settings are built from (src/config/<area>.ts): how a value is
 * read (an empty string is unset; lists are comma-separated; numbers are whole unless said), each
 * rule's wording, and the documentation each setting carries (its area, whether it is advanced,
 * whether it is a secret, what happens when it is unset), which `tenantctl config` and
 * docs/configuration.md print. A setting's default is the schema's: docs read it by parsing "unset".
 */

export const emptyToUndefined = (value: unknown) =>
  typeof value === 'string' && value.trim() === '' ? undefined : value;

const splitList = (value: unknown) =>
  typeof value === 'string'
    ? value
        .split(',')
        .map((item) => item.trim())
        .filter((item) => item !== '')
    : value;

/** Free text, unset when empty. */
export const optionalText = () => z.preprocess(emptyToUndefined, z.string().optional());

/** Free text with a default. */
export const text = (fallback: string) => z.preprocess(emptyToUndefined, z.string().default(fallback));

/** A string matching `pattern` (`rule` names it), optional or with a default. */
export function matching(pattern: RegExp, rule: string): z.ZodType<string | undefined>;
export function matching(pattern: RegExp, rule: string, fallback: string): z.ZodType<string>;
export function matching(pattern: RegExp, rule: string, fallback?: string): z.ZodType<string | undefined> {
  const base = z.string().regex(pattern, rule);
  return z.preprocess(emptyToUndefined, fallback === undefined ? base.optional() : base.default(fallback));
}

/** A string checked by a function that lists its problems (none: valid). */
export function checkedText(problemsOf: (value: string) => readonly string[]) {
  return z.preprocess(
    emptyToUndefined,
    z
      .string()
      .superRefine((value, ctx) => {
        for (const message of problemsOf(value)) ctx.addIssue({ code: 'custom', message });
      })
      .optional(),
  );
}

/** A whole number within [min, max], optional or with a default. */
export function wholeNumber(min: number, max: number): z.ZodType<number | undefined>;
export function wholeNumber(min: number, max: number, fallback: number): z.ZodType<number>;
export function wholeNumber(min: number, max: number, fallback?: number): z.ZodType<number | undefined> {
  const base = z.coerce.number().int('must be a whole number').min(min).max(max);
  return z.preprocess(emptyToUndefined, fallback === undefined ? base.optional() : base.default(fallback));
}

/** A TCP port (0 picks a free one). */
export const port = (fallback: number) => wholeNumber(0, 65535, fallback);

/** A positive number (fractions allowed) up to max. */
export const positiveNumber = (max: number, fallback: number) =>
  z.preprocess(emptyToUndefined, z.coerce.number().positive().max(max).default(fallback));

/** One of a fixed set of words, optional or with a default. */
export function choice<const T extends readonly [string, ...string[]]>(values: T): z.ZodType<T[number] | undefined>;
export function choice<const T extends readonly [string, ...string[]]>(
  values: T,
  fallback: T[number],
): z.ZodType<T[number]>;
export function choice<const T extends readonly [string, ...string[]]>(values: T, fallback?: T[number]) {
  const base = z.enum(values);
  return z.preprocess(emptyToUndefined, fallback === undefined ? base.optional() : base.default(fallback as never));
}

/** `host:port` (a name, an IPv4 address or a bracketed IPv6 one). */
export const hostPort = () =>
  matching(
    /^[A-Za-z0-9.-]+:[0-9]{1,5}$|^\[[0-9a-fA-F:]+\]:[0-9]{1,5}$/,
    'must be host:port, e.g. localhost:7233',
  ) as z.ZodType<string | undefined>;

/** An http(s) URL, optional; `rule` is the whole message of a bad one. */
export const httpUrl = (rule: string) =>
  z.preprocess(emptyToUndefined, z.url({ protocol: /^https?$/, error: rule }).optional());

/** A comma-separated list of items each checked by `item`; unset: empty. */
export const list = <T extends z.ZodType>(item: T) =>
  z.preprocess(emptyToUndefined, z.preprocess(splitList, z.array(item).default([])));

/** A duration such as 30m, 24h, 3d (units s, m, h, d; `rule` gives the examples). */
export const DURATION_TEXT = /^\d+(s|m|h|d)$/;
/** As DURATION_TEXT, longer than zero. */
export const POSITIVE_DURATION_TEXT = /^[1-9][0-9]*(s|m|h|d)$/;
export function duration(rule: string): z.ZodType<string | undefined>;
export function duration(rule: string, fallback: string): z.ZodType<string>;
export function duration(rule: string, fallback?: string) {
  return fallback === undefined ? matching(DURATION_TEXT, rule) : matching(DURATION_TEXT, rule, fallback);
}

/** A whole number of micro-USD as a string (amounts exceed a double's integers): `positive` excludes 0. */
export function microUsd(options: { positive: boolean; example: string }): z.ZodType<string | undefined>;
export function microUsd(options: { positive: boolean; example: string }, fallback: string): z.ZodType<string>;
export function microUsd(options: { positive: boolean; example: string }, fallback?: string) {
  const pattern = options.positive ? /^[1-9][0-9]{0,29}$/ : /^(0|[1-9][0-9]{0,29})$/;
  const rule = `must be a ${options.positive ? 'positive ' : ''}whole number of micro-USD, e.g. ${options.example}`;
  return fallback === undefined ? matching(pattern, rule) : matching(pattern, rule, fallback);
}

// ---------------------------------------------------------------------------------------------
// Settings and areas: each variable with its documentation.

export const AREAS = {
  database: 'database',
  temporal: 'Temporal',
  logging: 'logging',
  platform: 'platform',
  secrets: 'secrets',
  worker: 'worker',
  gateway: 'gateway',
  rotation: 'rotation',
  outbound: 'outbound calls',
  events: 'events',
  drift: 'drift',
  funding: 'funding and top-ups',
  'safe-ops': 'operators and safe operations',
  tenantctl: 'tenantctl',
  'dev-stack': 'dev stack and cluster',
  development: 'development and tests',
  deprecated: 'deprecated',
} as const;
export type AreaName = keyof typeof AREAS;

export interface SettingDoc {
  /** What it does, one or two sentences (Markdown: backticks for names and values). */
  description: string;
  /** A tuning knob users almost never change: its code default is the sensible one. */
  advanced?: boolean;
  /** Its value is a credential: never printed (tenantctl config shows only whether it is set). */
  secret?: boolean;
  /** What happens when it is unset, for a setting without a default value (e.g. "off"). */
  unset?: string;
  /** What `npm start` / `npm run cluster` sets it to when the user does not. */
  devStack?: string;
}

export interface Setting<S extends z.ZodType = z.ZodType> extends SettingDoc {
  schema: S;
}

/** A variable's schema with its documentation (the description is also the schema's). */
export function setting<S extends z.ZodType>(schema: S, doc: SettingDoc): Setting<S> {
  return { ...doc, schema: schema.describe(doc.description) };
}

export interface Area<T extends Record<string, Setting>> {
  name: AreaName;
  settings: T;
}

export type ShapeOf<T extends Record<string, Setting>> = { [K in keyof T]: T[K]['schema'] };

export function area<T extends Record<string, Setting>>(name: AreaName, settings: T): Area<T> {
  return { name, settings };
}

/** The zod shape of an area, to compose the configuration's schema. */
export function shapeOf<T extends Record<string, Setting>>(of: Area<T>): ShapeOf<T> {
  return Object.fromEntries(Object.entries(of.settings).map(([name, s]) => [name, s.schema])) as ShapeOf<T>;
}

/** What a setting is when unset: its schema's default, or undefined. */
export function defaultOf(s: Setting): unknown {
  const parsed = s.schema.safeParse(undefined);
  return parsed.success ? parsed.data : undefined;
}

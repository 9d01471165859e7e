import { z } from 'zod';
import { normaliseText, textProblem, textRuleText, type TextRule } from './text-rule.js';
import { pathSegmentProblem } from './path-segment.js';

/**
 * `freeText({ max })`: the zod schema of every free-text field (reasons, labels, names, descriptions) at every way in
 * (HTTP routes, tenantctl, client helpers, the workflows' input validation). Its output is the normalised text (NFC,
 * trimmed); a problem is one issue on the field, `must ...`, naming the rule (src/domain/text-rule.ts says why).
 */
export function freeText(rule: TextRule & { required?: string }) {
  return z
    .string({ error: (issue) => (issue.input === undefined ? (rule.required ?? 'is required') : 'must be a string') })
    .overwrite((value) => normaliseText(value, rule))
    .superRefine((value, ctx) => {
      const problem = textProblem(value, rule);
      if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
    })
    .meta({
      description: textRuleText(rule),
      maxLength: rule.max,
      ...((rule.min ?? 1) > 0 ? { minLength: rule.min ?? 1 } : {}),
    });
}

export { textRuleText, type TextRule } from './text-rule.js';

/** An id that becomes a platform URL path segment (a project or sub-account id typed by a person). */
export function pathSegmentId(max = 200) {
  return z
    .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
    .max(max, `must be at most ${max} characters`)
    .superRefine((value, ctx) => {
      const problem = pathSegmentProblem(value);
      if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
    });
}

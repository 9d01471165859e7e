import { EXTERNAL_REF_RULE, InvalidInputError } from '../../domain/tenant-input.js';

/**
 * The operator's mapping file for `tenantctl import plan|apply --map refs.csv`: the external ref to
 * record for sub-accounts that carry none. One `subaccountId,externalRef` a line; an optional header
 * line of exactly those names; blank lines and `#` comments are skipped. No quoting: neither an id
 * nor a ref may hold a comma or a quote.
 */
export interface RefMapping {
  subaccountId: string;
  externalRef: string;
  line: number;
}

/** Bad operator input: one error naming every problem (field and rule), one line each, before anything is written. */
export class ImportInputError extends InvalidInputError {
  override name = 'ImportInputError';
}

const REF = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

export function parseRefMap(text: string, file: string): Map<string, RefMapping> {
  const problems: string[] = [];
  const bySubaccount = new Map<string, RefMapping>();
  const byRef = new Map<string, RefMapping>();
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = index + 1;
    const where = `--map ${file} line ${line}`;
    const content = raw.trim();
    if (content === '' || content.startsWith('#')) return;
    const fields = content.split(',').map((f) => f.trim());
    if (line === 1 && fields.length === 2 && /^subaccountid$/i.test(fields[0]!) && /^externalref$/i.test(fields[1]!))
      return;
    if (fields.length !== 2) {
      problems.push(`${where}: expected 2 fields "subaccountId,externalRef", found ${fields.length}`);
      return;
    }
    const [subaccountId, externalRef] = fields as [string, string];
    if (subaccountId === '' || /["'\s]/.test(subaccountId)) {
      problems.push(`${where}: subaccountId must be a non-empty id without quotes or blanks`);
      return;
    }
    if (!REF.test(externalRef)) {
      problems.push(`${where}: externalRef "${externalRef}" must be ${EXTERNAL_REF_RULE}`);
      return;
    }
    const mapping = { subaccountId, externalRef, line };
    const sameSub = bySubaccount.get(subaccountId);
    if (sameSub) {
      problems.push(`${where}: subaccountId ${subaccountId} is mapped twice (first on line ${sameSub.line})`);
      return;
    }
    const sameRef = byRef.get(externalRef);
    if (sameRef) {
      problems.push(
        `${where}: externalRef ${externalRef} is given to two sub-accounts (${sameRef.subaccountId} ` +
          `on line ${sameRef.line} and ${subaccountId})`,
      );
      return;
    }
    bySubaccount.set(subaccountId, mapping);
    byRef.set(externalRef, mapping);
  });
  if (problems.length) throw new ImportInputError(problems);
  return bySubaccount;
}

import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The order test files are handed to the workers: vitest's own (each group by itself; in a group one project
 * after the other, by name; in a project the longest last time first, else the largest), except that in the
 * group of `npm run test:fast` the workflow files go before the unit files.
 *
 * Why: a workflow file waits on the dev server (a close's wait for open rotations polls 29 times a second apart,
 * whatever its input), a unit file on the CPU. By name the unit files came first, and the workflow files' waits
 * began only after them: with both cores busy for the unit files' first half minute and then partly idle while
 * the workflow waits ran out. Started first, those waits run out while the unit files use the CPU.
 *
 * Projects stay in blocks, not interleaved file by file: a worker of a project that shares its module cache
 * (isolate: false) is kept for the next file only when that file is of the same project; otherwise it is
 * stopped and a new process imports everything again.
 */
const FIRST = ['workflows'];

export default class FastSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const at = FIRST.indexOf(spec.project.name);
      return at === -1 ? FIRST.length : at;
    };
    // Array.prototype.sort is stable: within a group and a rank, vitest's order stands.
    return sorted.sort(
      (a, b) => a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder || rank(a) - rank(b),
    );
  }
}

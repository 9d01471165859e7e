import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { fileURLToPath } from 'node:url';

const TENANTCTL = fileURLToPath(new URL('../bin/tenantctl.js', import.meta.url));
const READY_LINE = 'worker polling';

/** An exit of the worker that the run did not cause (a crash): reported as a violation. */
export interface UnexpectedExit {
  at: string;
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The last lines the process wrote (already token-masked by its logger). */
  tail: string;
}

/**
 * The production worker as a child process (`tenantctl worker`), as it runs in production: it can
 * be SIGKILLed like a crashed machine. Everything it writes goes to one log file, scanned for
 * tokens at the end. A crash the run did not cause is recorded and the worker is started again,
 * so one bug does not hide the others.
 */
export class WorkerProcess {
  readonly unexpectedExits: UnexpectedExit[] = [];
  /** Starts that never reached polling (e.g. Postgres still down): the worker refuses to start, which is right. */
  startFailures = 0;
  starts = 0;
  kills = 0;
  #child: ChildProcess | undefined;
  #tail = '';
  #ready = false;
  #starting: Promise<void> | undefined;
  #expectingExit = false;
  #stopping = false;
  #log: WriteStream;

  constructor(
    private readonly env: Record<string, string>,
    readonly logFile: string,
    private readonly say: (line: string) => void,
  ) {
    this.#log = createWriteStream(logFile, { flags: 'a' });
  }

  get running(): boolean {
    return this.#child !== undefined;
  }

  /** Starts the worker and waits until it polls; while one is starting, waits for that one. */
  start(): Promise<void> {
    if (this.#child) return this.#starting ?? Promise.resolve();
    this.#starting = this.#spawn();
    return this.#starting;
  }

  async #spawn(): Promise<void> {
    this.starts += 1;
    const started = Date.now();
    const child = spawn(process.execPath, [TENANTCTL, 'worker'], {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/root',
        DATA_DIR: '/nonexistent-chaos-stack-dir',
        ...this.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.#child = child;
    this.#expectingExit = false;
    this.#ready = false;
    this.#tail = '';
    const ready = new Promise<void>((resolve, reject) => {
      let seen = '';
      const onData = (chunk: Buffer) => {
        const text = chunk.toString();
        this.#log.write(text);
        this.#tail = (this.#tail + text).slice(-4000);
        if (seen.length < 100_000) seen += text;
        if (seen.includes(READY_LINE)) {
          this.#ready = true;
          resolve();
        }
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.once('exit', () => reject(new Error(`the worker exited before polling: ${this.#tail.slice(-1000)}`)));
    });
    child.once('exit', (code, signal) => this.#onExit(child, code, signal));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>(
      (_, reject) =>
        (timer = setTimeout(() => reject(new Error('the worker did not start polling within 180 s')), 180_000)),
    );
    try {
      await Promise.race([ready, timeout]);
    } finally {
      clearTimeout(timer);
    }
    this.say(`worker started (pid ${child.pid}, ready in ${((Date.now() - started) / 1000).toFixed(1)} s)`);
  }

  /** SIGKILL, like a machine that dies: no shutdown, activities and workflow tasks abandoned mid-flight. */
  async kill(): Promise<void> {
    const child = this.#child;
    if (!child) return;
    this.kills += 1;
    this.#expectingExit = true;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    this.say(`worker killed (SIGKILL, pid ${child.pid})`);
  }

  pauses = 0;

  /**
   * SIGSTOP, then SIGCONT after `ms`: a worker cut off (a long GC pause, a partition), not dead. Its workflow tasks
   * time out and run elsewhere; its frozen local activity attempts go on when it wakes, beside their successors.
   */
  async pause(ms: number): Promise<void> {
    const child = this.#child;
    if (!child || !this.#ready) return;
    this.pauses += 1;
    child.kill('SIGSTOP');
    this.say(`worker paused (SIGSTOP, pid ${child.pid}) for ${(ms / 1000).toFixed(1)} s`);
    await new Promise((resolve) => setTimeout(resolve, ms));
    if (this.#child === child) child.kill('SIGCONT');
    this.say(`worker woken (SIGCONT, pid ${child.pid})`);
  }

  /** Graceful stop at the end of the run. */
  async stop(): Promise<void> {
    this.#stopping = true;
    const child = this.#child;
    if (child) {
      this.#expectingExit = true;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    }
    await new Promise<void>((resolve) => this.#log.end(() => resolve()));
  }

  #onExit(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.#child !== child) return;
    this.#child = undefined;
    if (this.#expectingExit || this.#stopping) return;
    if (this.#ready) {
      this.unexpectedExits.push({ at: new Date().toISOString(), code, signal, tail: this.#tail });
      this.say(`worker EXITED on its own (code ${code}, signal ${signal}); starting it again`);
    } else {
      this.startFailures += 1;
      this.say(`worker could not start (code ${code}); trying again`);
    }
    // Like a process supervisor: start it again, again and again until it stays up.
    setTimeout(() => {
      if (!this.#stopping) this.start().catch(() => undefined);
    }, 2000);
  }
}

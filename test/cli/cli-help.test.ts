import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { commandHelp } from '../../src/main.js';

// Issue 30's CLI items: --help and help COMMAND on stdout with exit 0 for every command; --strict keys;
// WEBHOOK_ALLOW_INSECURE warned about at start.

const run = promisify(execFile);
const BIN = join(process.cwd(), 'bin/lanebridge');
let dir: string;
let databaseUrl: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'lanebridge-cli-help-'));
  databaseUrl = inject('databaseUrl') ?? join(dir, 'cli.db');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function cli(args: string[], env: Record<string, string> = {}) {
  try {
    const { stdout, stderr } = await run(BIN, args, { env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent', ...env } });
    return { stdout, stderr, code: 0 };
  } catch (err) {
    const e = err as { stdout: string; stderr: string; code: number };
    return { stdout: e.stdout, stderr: e.stderr, code: e.code };
  }
}

const COMMANDS = ['serve', 'worker', 'org create', 'org list', 'user create', 'user set-password', 'key create', 'key revoke', 'key rotate', 'key list'];

describe('help', () => {
  it('--help, help and help COMMAND print on stdout and exit 0', async () => {
    const all = await cli(['--help']);
    expect(all).toMatchObject({ code: 0, stderr: '' });
    for (const c of COMMANDS) expect(all.stdout).toContain(`  ${c}`);
    expect(all.stdout).toBe(`${commandHelp([])}\n`);
    for (const args of [['help'], ['help', 'key', 'create'], ['serve', '--help'], ['user', 'create', '-h']]) {
      const words = args.filter((a) => a !== 'help' && !a.startsWith('-'));
      const res = await cli(args);
      expect(res, args.join(' ')).toEqual({ code: 0, stderr: '', stdout: `${commandHelp(words)}\n` });
    }
  }, 120_000);

  it('every command has its help: its own lines only', () => {
    for (const c of COMMANDS) {
      const text = commandHelp(c.split(' '))!;
      expect(text, c).toMatch(new RegExp(`^Usage: lanebridge <command>\\n\\n  ${c}( |$)`, 'm'));
      for (const other of COMMANDS.filter((o) => o !== c)) expect(text, `${c} vs ${other}`).not.toMatch(new RegExp(`\\n  ${other}( |$)`));
    }
    // A group: every command of it.
    const key = commandHelp(['key'])!;
    for (const c of ['key create', 'key revoke', 'key rotate', 'key list']) expect(key).toContain(`  ${c}`);
    expect(commandHelp(['key', 'create'])).toContain('--strict');
    expect(commandHelp(['frobnicate'])).toBeNull();
  });

  it('help for a command that does not exist is a usage error (stderr, exit 2); no command at all too', async () => {
    const res = await cli(['help', 'frobnicate']);
    expect(res.code).toBe(2);
    expect(res.stdout).toBe('');
    expect(res.stderr).toMatch(/^lanebridge: Unknown command 'frobnicate'\n/);
    const none = await cli([]);
    expect(none.code).toBe(2);
    expect(none.stdout).toBe('');
    expect(none.stderr).toContain('Usage: lanebridge <command>');
  }, 120_000);
});

describe('key create --strict', () => {
  it('makes a strict key (listed as strict); without it the key is lenient and the answer keeps D10’s shape', async () => {
    const org = JSON.parse((await cli(['org', 'create', '--name', 'Strict Org'])).stdout);
    const strict = await cli(['key', 'create', '--org', org.id, '--name', 'strict', '--system', 'TMS', '--scopes', 'all', '--strict']);
    expect(strict.code).toBe(0);
    expect(JSON.parse(strict.stdout)).toMatchObject({ strict: true, per_minute: 100 });
    const lenient = JSON.parse((await cli(['key', 'create', '--org', org.id, '--name', 'lenient', '--system', 'TMS', '--scopes', 'all'])).stdout);
    expect(Object.keys(lenient).sort()).toEqual(['id', 'key', 'per_day', 'per_minute', 'scopes']);
    const list = JSON.parse((await cli(['key', 'list', '--org', org.id])).stdout);
    expect(list.items.map((k: { name: string; strict: boolean }) => [k.name, k.strict])).toEqual([
      ['strict', true],
      ['lenient', false],
    ]);
  }, 120_000);
});

/** Starts `serve` or `worker` and resolves with its output once `line` appears (then stops it). */
function outputUntil(args: string[], env: Record<string, string>, line: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(BIN, args, {
      env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'info', PORT: '0', WORKER_PORT: '0', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`timed out:\n${out}`));
    }, 90_000);
    const take = (c: Buffer) => {
      out += c.toString();
      if (line.test(out)) {
        clearTimeout(timer);
        child.kill('SIGTERM');
        child.once('exit', () => resolve(out));
      }
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
  });
}

describe('WEBHOOK_ALLOW_INSECURE', () => {
  it('serve and worker warn at start, in the same log format', async () => {
    for (const [args, started] of [
      [['serve'], 'Lanebridge listening'],
      [['worker'], 'Lanebridge webhook worker started'],
    ] as const) {
      const out = await outputUntil([...args], { WEBHOOK_ALLOW_INSECURE: 'on' }, /WEBHOOK_ALLOW_INSECURE is on/);
      const lines = out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(
        lines.find((l) => l.msg === started),
        out,
      ).toMatchObject({ level: 30, time: expect.any(Number), pid: expect.any(Number), hostname: expect.any(String) });
      expect(
        lines.find((l) => String(l.msg).startsWith('WEBHOOK_ALLOW_INSECURE')),
        out,
      ).toMatchObject({
        level: 40,
        msg: 'WEBHOOK_ALLOW_INSECURE is on: webhook URLs may use plain http and loopback or private addresses. For development only; unset it in production',
      });
    }
  }, 200_000);
});

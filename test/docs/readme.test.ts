import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { openDataStore } from '../../src/lib/db/index.js';
import { testClock, type TestApp } from '../helpers.js';
import { Visitor } from '../dashboard/support.js';

// The README's "first five minutes", word for word: its commands are read from README.md and run (the
// CLI as a process, the curl calls against the app on the same database), and it ends signed in to
// the dashboard with the user and password those commands made. On SQLite the CLI runs without
// DATABASE_URL in an empty directory (it creates ./data/lanebridge.db and says so); on PostgreSQL
// DATABASE_URL names a database that does not exist yet (the CLI creates it and says so).

const run = promisify(execFile);
const BIN = join(process.cwd(), 'bin/lanebridge');

/** The first ```sh block of the README's "first five minutes", backslash continuations joined. */
function firstFiveMinutes(): { commands: string[]; prose: string } {
  const readme = readFileSync(join(process.cwd(), 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## The first five minutes'));
  const body = section.slice(0, section.indexOf('\n## ', 3));
  const block = /```sh\n([\s\S]*?)```/.exec(body)![1]!;
  return {
    commands: block
      .replace(/\\\n\s*/g, ' ')
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean),
    prose: body,
  };
}

/** Shell words: quotes, $VAR / "$VAR" expansion, a # outside quotes starts a comment. */
function words(line: string, vars: Record<string, string>): string[] {
  const out: string[] = [];
  let cur: string | null = null;
  const expand = (text: string) => text.replace(/\$([A-Z_][A-Z0-9_]*)/g, (_, n: string) => vars[n] ?? '');
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (ch === "'") {
      const end = line.indexOf("'", i + 1);
      cur = (cur ?? '') + line.slice(i + 1, end);
      i = end;
    } else if (ch === '"') {
      const end = line.indexOf('"', i + 1);
      cur = (cur ?? '') + expand(line.slice(i + 1, end));
      i = end;
    } else if (/\s/.test(ch)) {
      if (cur !== null) out.push(cur);
      cur = null;
    } else if (ch === '#' && cur === null) {
      break;
    } else if (ch === '$') {
      const m = /^\$([A-Z_][A-Z0-9_]*)/.exec(line.slice(i))!;
      cur = (cur ?? '') + (vars[m[1]!] ?? '');
      i += m[0].length - 1;
    } else {
      cur = (cur ?? '') + ch;
    }
  }
  if (cur !== null) out.push(cur);
  return out;
}

/** A value the README elides (`org_01…`, `lbk_…`): the one printed earlier that starts the same way. */
function printedValue(placeholder: string, printed: unknown[]): string {
  const prefix = placeholder.slice(0, placeholder.indexOf('…'));
  const found = printed.flatMap((o) => Object.values(o as Record<string, unknown>)).find((v) => typeof v === 'string' && v.startsWith(prefix));
  if (typeof found !== 'string') throw new Error(`nothing printed starts with ${prefix}`);
  return found;
}

let dir: string;
let databaseUrl: string | undefined;
let pgName: string | null = null;
let t: TestApp | null = null;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'lanebridge-readme-'));
  const runUrl = inject('databaseUrl');
  if (runUrl) {
    const url = new URL(runUrl);
    pgName = `${url.pathname.slice(1)}_readme_${process.pid}`;
    const admin = new pg.Client({ connectionString: runUrl });
    await admin.connect();
    await admin.query(`drop database if exists ${pgName} with (force)`);
    await admin.end();
    url.pathname = `/${pgName}`;
    databaseUrl = url.toString();
  }
});

afterAll(async () => {
  await t?.app.close();
  await t?.store.close();
  rmSync(dir, { recursive: true, force: true });
  if (pgName) {
    const admin = new pg.Client({ connectionString: inject('databaseUrl')! });
    await admin.connect();
    await admin.query(`drop database if exists ${pgName} with (force)`);
    await admin.end();
  }
});

describe('README: the first five minutes', () => {
  it('runs word for word and ends signed in to the dashboard', { timeout: 120_000 }, async () => {
    const { commands, prose } = firstFiveMinutes();
    const env: Record<string, string | undefined> = { ...process.env, LOG_LEVEL: 'silent' };
    delete env.DATABASE_URL;
    if (databaseUrl) env.DATABASE_URL = databaseUrl;
    const vars: Record<string, string> = {};
    const printed: unknown[] = [];
    const stderr: string[] = [];
    let user: { email: string; password: string } | null = null;
    let ranCurl = 0;

    for (const line of commands) {
      if (line.startsWith('#')) continue;
      const assignment = /^([A-Z_]+)=(\S+)/.exec(line);
      if (assignment) {
        vars[assignment[1]!] = printedValue(assignment[2]!, printed);
        continue;
      }
      const argv = words(line, vars);
      if (argv[0] === 'bin/lanebridge') {
        const { stdout, stderr: err } = await run(BIN, argv.slice(1), { cwd: dir, env });
        stderr.push(err);
        const lines = stdout.trim().split('\n');
        expect(lines, line).toHaveLength(1);
        printed.push(JSON.parse(lines[0]!));
        if (argv[1] === 'user' && argv[2] === 'create') {
          user = { email: argv[argv.indexOf('--email') + 1]!, password: argv[argv.indexOf('--password') + 1]! };
        }
        continue;
      }
      if (argv[0] === 'curl') {
        t ??= await appOn(databaseUrl ?? join(dir, 'data', 'lanebridge.db'));
        const url = new URL(argv.find((a) => a.startsWith('http'))!);
        const headers: Record<string, string> = {};
        argv.forEach((a, i) => {
          if (a === '-H') {
            const [k, ...v] = argv[i + 1]!.split(':');
            headers[k!.trim().toLowerCase()] = v.join(':').trim();
          }
        });
        const method = argv.includes('-X') ? argv[argv.indexOf('-X') + 1]! : 'GET';
        const payload = argv.includes('-d') ? argv[argv.indexOf('-d') + 1] : undefined;
        const res = await t.app.inject({ method: method as 'GET', url: `${url.pathname}${url.search}`, headers, ...(payload ? { payload } : {}) });
        expect(res.statusCode, `${line}\n${res.body}`).toBeLessThan(300);
        printed.push(JSON.parse(res.body));
        ranCurl++;
        continue;
      }
      throw new Error(`the README runs something this test does not know: ${line}`);
    }

    // The CLI said which database it created.
    expect(stderr[0]).toMatch(
      databaseUrl ? /created PostgreSQL database "lanebridge_test_\d+_readme_\d+"/ : /created a new SQLite database at .*data\/lanebridge\.db/,
    );
    expect(stderr.slice(1).join('')).not.toMatch(/created/);
    if (!databaseUrl) expect(existsSync(join(dir, 'data', 'lanebridge.db'))).toBe(true);
    expect(ranCurl).toBe(2);
    // The customer the README posted is found by its name_contains call.
    expect((printed.at(-1) as { items: { external_reference_id: string }[] }).items.map((c) => c.external_reference_id)).toEqual(['CUST-ACME-001']);

    // "Then open /signin and sign in as … with that password."
    expect(user).not.toBeNull();
    expect(prose).toContain(`sign in as \`${user!.email}\``);
    const browser = new Visitor(t!);
    const signedIn = await browser.signIn(user!.email, user!.password);
    expect(signedIn.headers.location).toBe('/');
    const home = await browser.get('/');
    expect(home.statusCode).toBe(200);
    expect(home.body).toContain('Olive Ops');
    const customers = await browser.get('/customers');
    expect(customers.statusCode).toBe(200);
    expect(customers.body).toContain('Acme Manufacturing');
  });
});

async function appOn(url: string): Promise<TestApp> {
  const store = openDataStore(url, { poolSize: 3 });
  const config = { ...loadConfig({}), databaseUrl: url };
  const built = await buildApp({ config, store, logger: false, clock: testClock() });
  return { ...built, store, config, clock: testClock(), close: async () => {} } as TestApp;
}

describe('CLI: org list and user set-password', () => {
  it('lists organizations and sets a password a user can then sign in with', { timeout: 120_000 }, async () => {
    const env: Record<string, string | undefined> = { ...process.env, LOG_LEVEL: 'silent' };
    delete env.DATABASE_URL;
    if (databaseUrl) env.DATABASE_URL = databaseUrl;
    const cli = async (...args: string[]) => {
      try {
        const r = await run(BIN, args, { cwd: dir, env });
        return { code: 0, out: JSON.parse(r.stdout), stderr: r.stderr };
      } catch (err) {
        const e = err as { code: number; stdout: string; stderr: string };
        return { code: e.code, out: null, stderr: e.stderr };
      }
    };
    const org = (await cli('org', 'create', '--name', 'Beta Haulage')).out;
    const list = (await cli('org', 'list')).out;
    expect(list.items.map((o: { id: string }) => o.id)).toContain(org.id);
    expect(list.items.find((o: { id: string }) => o.id === org.id)).toEqual({ id: org.id, name: 'Beta Haulage', created_at: expect.stringMatching(/Z$/) });

    // A user made without a password cannot sign in, until one is set.
    await cli('user', 'create', '--org', org.id, '--email', 'nopw@beta.example', '--name', 'No Password');
    t ??= await appOn(databaseUrl ?? join(dir, 'data', 'lanebridge.db'));
    await expect(new Visitor(t).signIn('nopw@beta.example', 'a new password here')).rejects.toThrow(/sign-in failed: 401/);
    const short = await cli('user', 'set-password', '--email', 'nopw@beta.example', '--password', 'short');
    expect(short.code).toBe(2);
    expect(short.stderr).toContain('the password must have 10 to 1024 characters');
    const unknown = await cli('user', 'set-password', '--email', 'nobody@beta.example', '--password', 'a new password here');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.trim()).toBe("lanebridge: No user with email 'nobody@beta.example': create one with user create");
    const set = await cli('user', 'set-password', '--email', 'NOPW@beta.example', '--password', 'a new password here');
    expect(set.code).toBe(0);
    expect(set.out).toEqual({ id: expect.stringMatching(/^user_/), org_id: org.id, email: 'nopw@beta.example', name: 'No Password' });
    expect((await new Visitor(t).signIn('nopw@beta.example', 'a new password here')).statusCode).toBe(303);
    // From stdin, replacing it.
    const child = execFile(BIN, ['user', 'set-password', '--email', 'nopw@beta.example', '--password-stdin'], { cwd: dir, env });
    child.stdin!.end('another long password\n');
    const code = await new Promise<number>((resolve) => child.on('exit', (c) => resolve(c ?? -1)));
    expect(code).toBe(0);
    await expect(new Visitor(t).signIn('nopw@beta.example', 'a new password here')).rejects.toThrow(/401/);
    expect((await new Visitor(t).signIn('nopw@beta.example', 'another long password')).statusCode).toBe(303);
  });
});

describe('PostgreSQL: a database that cannot be created', () => {
  it.runIf(inject('databaseUrl') !== null)('gives one line that names the fix, no stack trace', async () => {
    const url = new URL(inject('databaseUrl')!);
    url.username = 'lanebridge_no_such_role';
    url.pathname = '/lanebridge_never';
    const r = await run(BIN, ['org', 'list'], { env: { ...process.env, DATABASE_URL: url.toString() } }).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => e,
    );
    expect(r.code).toBe(1);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^lanebridge: cannot open PostgreSQL database "lanebridge_never" at .*: .*lanebridge_no_such_role.*Check that the server runs and DATABASE_URL is right$/,
    );
  });
});

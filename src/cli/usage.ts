import type { parseArgs } from 'node:util';
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../modules/accounts/accounts.service.js';

export const USAGE = `Usage: lanebridge <command>

  serve                                           run the HTTP service (PORT, HOST, DATABASE_URL)
  worker                                          deliver webhooks and run imports only (DATABASE_URL);
                                                  /healthz, /readyz and /metrics on WORKER_PORT
  import --org ORG_ID --resource RESOURCE FILE [--format ndjson|csv] [--emit-events summary|all]
         [--operation upsert|create] [--delimiter C] [--columns JSON]
                                                  run an import of FILE with a progress bar (stderr)
  setup-code                                      print the one-time code the dashboard's first-run page asks for
  org create --name NAME
  org list
  user create --org ORG_ID --email EMAIL --name NAME [--role admin|member] [--password P | --password-stdin]
                                                  (role: admin for an organization's first user, else member)
  user set-password --email EMAIL (--password P | --password-stdin)
                                                  (ends every dashboard session of the user)
  user sessions-end --email EMAIL                 sign the user out of the dashboard everywhere
  user remove --email EMAIL                       remove the user (not an organization's last admin);
                                                  the organization's API keys stay
  key create --org ORG_ID --name NAME --system SYSTEM --scopes all|s1,s2 [--per-minute N] [--per-day N]
             [--expires-at ISO] [--strict]        (a UTC date or time in the future; default: never)
                                                  --strict: the key's requests refuse unknown fields (422)
                                                  as Prefer: handling=strict does
  key revoke --org ORG_ID --id KEY_ID
  key rotate --org ORG_ID --id KEY_ID [--grace-hours N]
                                                  (the old key keeps working N hours, default 0, at most 720)
  key list --org ORG_ID
  help [COMMAND]                                  this text, or one command's (also: COMMAND --help)

Each command prints one JSON object on stdout; messages go to stderr. Passwords (for the dashboard's
sign-in) have ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters; --password-stdin reads one from the first line of stdin
(kept out of the shell history and the process list).`;

/** A command used wrongly (exit 2): its message, then the usage of that command (`usage: false`: a refusal that usage would not help with). */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly opts: { usage?: boolean } = {},
  ) {
    super(message);
  }
}

/** The usage lines of one command (`key`, `key create`), with their continuation lines; null when none. */
export function commandHelp(words: readonly string[]): string | null {
  if (words.length === 0) return USAGE;
  const name = words.join(' ');
  const lines = USAGE.split('\n');
  const out: string[] = [];
  let taking = false;
  for (const line of lines) {
    if (/^ {2}\S/.test(line)) taking = line.slice(2) === name || line.slice(2).startsWith(`${name} `);
    else if (!/^ {3,}\S/.test(line)) taking = false;
    if (taking) out.push(line);
  }
  return out.length > 0 ? `Usage: lanebridge <command>\n\n${out.join('\n')}` : null;
}

/** The options of every command (node:util's parseArgs, strict: an unknown option is a usage error). */
export const OPTIONS = {
  name: { type: 'string' },
  org: { type: 'string' },
  email: { type: 'string' },
  password: { type: 'string' },
  'password-stdin': { type: 'boolean' },
  id: { type: 'string' },
  system: { type: 'string' },
  scopes: { type: 'string' },
  'per-minute': { type: 'string' },
  'per-day': { type: 'string' },
  resource: { type: 'string' },
  format: { type: 'string' },
  'emit-events': { type: 'string' },
  operation: { type: 'string' },
  delimiter: { type: 'string' },
  columns: { type: 'string' },
  role: { type: 'string' },
  'expires-at': { type: 'string' },
  'grace-hours': { type: 'string' },
  strict: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** The options given, as parseArgs reads them. */
export type CliValues = ReturnType<typeof parseArgs<{ args: string[]; options: typeof OPTIONS; allowPositionals: true; strict: true }>>['values'];

import { createHmac } from 'node:crypto';
import { Signer, type UnsignResult } from '@fastify/cookie';

/**
 * The key that signs dashboard cookies and anonymous form tokens. Configured (DASHBOARD_COOKIE_SECRET)
 * or else made once and kept in the database, so every instance of a deployment signs alike and a
 * restart does not sign everyone out. Loaded on the first dashboard request, not at boot, so the app
 * starts (and the API answers 503s) while the database is away. `stored` reads (or first makes) the
 * kept one (the sessions service).
 */
export function cookieSecret(stored: () => Promise<string>, configured: string | undefined) {
  let key: Buffer | null = configured ? Buffer.from(configured, 'utf8') : null;
  let signer: Signer | null = key ? new Signer(key) : null;
  let loading: Promise<void> | null = null;

  async function load() {
    const value = await stored();
    if (!value) throw new Error('dashboard cookie secret could not be stored');
    key = Buffer.from(value, 'utf8');
    signer = new Signer(key);
  }

  function current(): Signer {
    if (!signer) throw new Error('dashboard cookie secret used before it was loaded');
    return signer;
  }

  return {
    async ready(): Promise<void> {
      if (signer) return;
      loading ??= load().catch((err) => {
        loading = null;
        throw err;
      });
      await loading;
    },
    /** For @fastify/cookie: signs with the secret once loaded. */
    signer: { sign: (value: string): string => current().sign(value), unsign: (value: string): UnsignResult => current().unsign(value) },
    hmac(purpose: string, value: string): string {
      if (!key) throw new Error('dashboard cookie secret used before it was loaded');
      return createHmac('sha256', key).update(`${purpose}\n${value}`).digest('base64url');
    },
  };
}

export type CookieSecret = ReturnType<typeof cookieSecret>;

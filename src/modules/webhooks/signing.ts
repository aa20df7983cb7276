import { createHmac, randomBytes } from 'node:crypto';

/** A new signing secret: `whsec_` and the base64 of 24 random bytes (Standard Webhooks' layout). */
export function newSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

/** The HMAC key of a secret: the base64-decoded bytes after `whsec_`. */
function keyOf(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
}

/** One Standard Webhooks v1 signature: `v1,` + base64 HMAC-SHA256 of "{id}.{timestamp}.{body}". */
export function sign(secret: string, id: string, timestamp: number, body: string): string {
  return `v1,${createHmac('sha256', keyOf(secret)).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/**
 * The three Standard Webhooks headers of one delivery. `secrets` are the endpoint's current secret and,
 * during the 24 h after a rotation, the previous one: one signature each, space-separated.
 */
export function signedHeaders(secrets: readonly string[], id: string, timestamp: number, body: string): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((s) => sign(s, id, timestamp, body)).join(' '),
  };
}

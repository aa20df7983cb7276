/**
 * Verifying a webhook delivery (Standard Webhooks v1), with the `standardwebhooks` package: the
 * reference implementation of the scheme, so this file does no cryptography of its own.
 */
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import type { components } from './schema.js';

export { WebhookVerificationError };

/** What a delivery's body is: one event of the change feed. */
export type WebhookEvent = components['schemas']['Event'];

type HeaderSource = Headers | Record<string, string | string[] | undefined>;

function headerRecord(headers: HeaderSource): Record<string, string> {
  const out: Record<string, string> = {};
  if (typeof (headers as Headers).forEach === 'function' && typeof (headers as Headers).get === 'function') {
    (headers as Headers).forEach((value, name) => (out[name.toLowerCase()] = value));
    return out;
  }
  for (const [name, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (value !== undefined) out[name.toLowerCase()] = Array.isArray(value) ? value.join(' ') : value;
  }
  return out;
}

/**
 * The event of a delivery whose signature and timestamp check out, else a WebhookVerificationError.
 * `body` is the raw body as received (before any JSON parsing); `secrets` the endpoint's `whsec_…`
 * secret, or several while you roll one over on your side (any one that verifies is enough). The
 * timestamp must be within 5 minutes of your clock (replayed captures are refused).
 */
export function verifyWebhook(body: string | Uint8Array, headers: HeaderSource, secrets: string | readonly string[]): WebhookEvent {
  const payload = typeof body === 'string' ? body : new TextDecoder().decode(body);
  const record = headerRecord(headers);
  let last: unknown = new WebhookVerificationError('No secret given');
  for (const secret of typeof secrets === 'string' ? [secrets] : secrets) {
    try {
      return new Webhook(secret).verify(payload, record) as WebhookEvent;
    } catch (err) {
      last = err;
    }
  }
  throw last;
}

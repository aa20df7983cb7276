import { SpanStatusCode } from '@opentelemetry/api';
import type { Dispatcher } from 'undici';
import { toIso } from '../../lib/clock.js';
import { inSpan, ORGANIZATION_ATTRIBUTE } from '../../lib/telemetry/tracing.js';
import { releaseClaim, type ClaimedDelivery } from './claims.repo.js';
import { sendAttempt } from './attempt.js';
import { recordOutcome, type AttemptResult, type Observed, type OutcomeDeps } from './outcome.js';
import { envelopeOf } from './webhooks.outbox.js';
import { signedHeaders } from './signing.js';
import type { Chain } from './slots.js';
import { urlProblem } from './url-policy.js';
import type { EndpointRow, DeliveryRow } from './webhooks.repo.js';

const USER_AGENT = 'Lanebridge-Webhooks/1';

/** What one attempt needs: the outcome's dependencies, the URL rules, its time limit and the connection pool. */
export interface AttemptContext extends OutcomeDeps {
  allowInsecure: boolean;
  timeoutMs: number;
  dispatcher: Dispatcher;
}

/**
 * Sends one claimed delivery (an attempt of `chain`, which can cut it) and records its outcome; null
 * when nothing was recorded: the claim was lost, the endpoint went away, or the process is stopping
 * (then the claim is given back at once: the receiver may have it already, at least once).
 */
export function deliver(ctx: AttemptContext, c: ClaimedDelivery, claim: string, chain: Chain): Promise<AttemptResult | null> {
  const { delivery: d, endpoint: ep } = c;
  // A trace of its own per attempt (whichever request woke the worker is not its cause); the
  // statements that claim nothing but record this attempt's outcome are its children.
  return inSpan(
    'webhook attempt',
    {
      [ORGANIZATION_ATTRIBUTE]: ep.org_id,
      'lanebridge.webhook.endpoint_id': ep.id,
      'lanebridge.webhook.delivery_id': d.id,
      'lanebridge.webhook.attempt': d.attempt + 1,
      'lanebridge.event.id': d.event_id,
      'lanebridge.event.type': d.event_type,
      ...hostOf(ep.url),
    },
    async (span) => {
      const result = await attempt(ctx, c, claim, chain);
      if (!result) span.setAttribute('lanebridge.webhook.outcome', 'not_recorded');
      else {
        span.setAttribute('lanebridge.webhook.outcome', result.status);
        if (result.response_status !== null) span.setAttribute('http.response.status_code', result.response_status);
        if (result.status !== 'delivered') span.setStatus({ code: SpanStatusCode.ERROR, message: result.error ?? undefined });
      }
      return result;
    },
    { root: true },
  );
}

/** The receiver's host and port for a span (never the whole URL: a receiver may carry a token in it). */
function hostOf(url: string): Record<string, string | number> {
  try {
    const u = new URL(url);
    return { 'server.address': u.hostname, 'server.port': Number(u.port) || (u.protocol === 'https:' ? 443 : 80) };
  } catch {
    return {};
  }
}

/** One attempt: what it saw (nothing sent when the event is gone or the URL is refused), then its outcome recorded. */
async function attempt(ctx: AttemptContext, c: ClaimedDelivery, claim: string, chain: Chain): Promise<AttemptResult | null> {
  const { delivery: d, endpoint: ep } = c;
  const startedAt = ctx.clock.now();
  const body = d.payload ?? (c.event ? envelopeOf(c.event) : null);
  const unsent = { startedAt, responseStatus: null, retryAfter: null, responseExcerpt: null, durationMs: null };
  let seen: Observed | null;
  if (body === null) {
    seen = { ...unsent, error: 'The event is no longer kept (retention); it cannot be sent', sendable: false };
  } else {
    // The URL's form and an address literal are checked here; a host name's addresses by the
    // connection itself (guardedLookup), once, as they are resolved to connect.
    const problem = await urlProblem(ep.url, { allowInsecure: ctx.allowInsecure, resolveNames: false });
    seen = problem ? { ...unsent, error: `URL refused: ${problem}`, sendable: true } : await signAndSend(ctx, c, claim, chain, body, startedAt);
    if (seen === null) return null;
  }
  return recordOutcome(ctx, c, claim, seen);
}

/** The secrets that sign now: the endpoint's, and the previous one during a rotation's overlap. */
function signingSecrets(ep: EndpointRow, startedAt: Date): string[] {
  return [ep.secret, ...(ep.previous_secret && ep.previous_secret_until && ep.previous_secret_until > toIso(startedAt) ? [ep.previous_secret] : [])];
}

/**
 * Signs the body (Standard Webhooks, signing.ts) and POSTs it by the attempt's deadline (attempt.ts).
 * Null when the attempt was cut before an answer: stopping (the claim is given back) or the endpoint
 * removed (deleted: its rows are gone; disabled: its pending rows failed), nothing left to record.
 */
async function signAndSend(ctx: AttemptContext, c: ClaimedDelivery, claim: string, chain: Chain, body: string, startedAt: Date): Promise<Observed | null> {
  const d: DeliveryRow = c.delivery;
  const headers = {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    ...signedHeaders(signingSecrets(c.endpoint, startedAt), d.event_id, Math.floor(startedAt.getTime() / 1000), body),
  };
  const answer = await sendAttempt({ url: c.endpoint.url, headers, body, deadlineMs: ctx.timeoutMs, dispatcher: ctx.dispatcher }, chain.nextAttempt());
  if (answer.cut === 'stopping') {
    await releaseClaim(ctx.db, d.id, claim).catch(() => undefined);
    return null;
  }
  if (answer.cut === 'endpoint_removed') return null;
  return { startedAt, ...answer, sendable: true };
}

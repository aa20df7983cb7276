import type { FastifyInstance } from 'fastify';
import { ValidationError } from '../../lib/http/errors.js';
import { CurrentPasswordError } from '../../modules/accounts/users.js';
import { MIN_PASSWORD_LENGTH } from '../../modules/accounts/accounts.service.js';
import type { DashboardSession } from '../../modules/accounts/sessions.js';
import { actorOf, checkSessionCsrf, formText, requireSession, sendPage, type DashboardContext } from '../context.js';
import { html, type SafeHtml } from '../html.js';
import { csrfField, errorSummary, field, notice, page, type FieldErrors } from '../layout.js';
import { fieldErrorsOf, tooManyAttempts } from './auth.js';

function passwordPage(s: DashboardSession, o: { errors?: FieldErrors; done?: boolean } = {}): SafeHtml {
  const errors = o.errors ?? {};
  return page({
    title: 'Change your password',
    session: s,
    narrow: true,
    body: html`<h1>Change your password</h1>
<p>You are signed in as ${s.userName} (${s.userEmail}), ${s.userRole === 'admin' ? 'an admin' : 'a member'} of ${s.orgName}.</p>
${o.done ? notice('ok', html`<p>Your password is changed. Use it the next time you sign in. Your other sessions (other browsers and devices) are signed out.</p>`) : ''}
${errorSummary(errors)}
<form class="stack" method="post" action="/account/password" novalidate>
  ${csrfField(s.csrfToken)}
  ${field({ name: 'current_password', label: 'Current password', type: 'password', errors, required: true, autocomplete: 'current-password' })}
  ${field({ name: 'new_password', label: 'New password', type: 'password', errors, required: true, autocomplete: 'new-password', hint: `At least ${MIN_PASSWORD_LENGTH} characters.` })}
  <div><button type="submit">Change password</button></div>
</form>`,
  });
}

/** One's own account (docs/dashboard.md, "Roles, the first run and the audit log"): the password, changed only with the current one; members may use it. */
export function accountRoutes(app: FastifyInstance, ctx: DashboardContext) {
  app.get('/account/password', async (req, reply) => {
    const s = requireSession(req, reply);
    if (!s) return reply;
    return sendPage(reply, passwordPage(s, { done: (req.query as Record<string, string | undefined>).done === 'changed' }));
  });

  app.post('/account/password', async (req, reply) => {
    const s = requireSession(req, reply);
    if (!s) return reply;
    checkSessionCsrf(req);
    const current = formText(req.body, 'current_password');
    const next = formText(req.body, 'new_password');
    // 5 tries a minute per address: a session left open cannot be used to guess the current password.
    const wait = ctx.formAttempts.take(`password\n${req.ip}`);
    if (wait > 0) {
      reply.header('retry-after', String(wait));
      return sendPage(reply, passwordPage(s, { errors: { current_password: tooManyAttempts(wait) } }), 429);
    }
    if (!current) return sendPage(reply, passwordPage(s, { errors: { current_password: 'Enter your current password.' } }), 403);
    try {
      // This session stays; the user's others end (docs/dashboard.md, "Sessions").
      await ctx.services.accounts.changeOwnPassword(s.orgId, s.userId, current, next, actorOf(req, s), s.id);
    } catch (err) {
      if (err instanceof CurrentPasswordError)
        return sendPage(reply, passwordPage(s, { errors: { current_password: 'Your current password is not correct.' } }), 403);
      if (err instanceof ValidationError) return sendPage(reply, passwordPage(s, { errors: fieldErrorsOf(err, { password: 'new_password' }) }), 422);
      throw err;
    }
    return reply.redirect('/account/password?done=changed', 303);
  });
}

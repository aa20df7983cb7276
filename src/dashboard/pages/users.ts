import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ConflictError, ValidationError } from '../../lib/http/errors.js';
import { EmailTakenError, isRole } from '../../modules/accounts/users.js';
import { MIN_PASSWORD_LENGTH, passwordProblem } from '../../modules/accounts/accounts.service.js';
import type { DashboardSession } from '../../modules/accounts/sessions.js';
import { actorOf, doneMessage, formText, idParam, sendPage, sessionForm, sessionPage, type DashboardContext } from '../context.js';
import { utc } from '../format.js';
import { html, segment } from '../html.js';
import { adminOnlyNote, csrfField, errorSummary, field, notice, page, type FieldErrors } from '../layout.js';
import { fieldErrorsOf } from './auth.js';

/** An admin's buttons beside another user: sign them out everywhere, remove them (docs/dashboard.md, "Sessions"). */
function accessButtons(s: DashboardSession, u: { id: string; name: string }) {
  return html`<form class="inline" method="post" action="/users/${segment(u.id)}/sessions/end">${csrfField(s.csrfToken)}<button type="submit" class="small secondary">End sessions<span class="visually-hidden"> of ${u.name}</span></button></form>
    <form class="inline" method="post" action="/users/${segment(u.id)}/remove">${csrfField(s.csrfToken)}<button type="submit" class="small danger">Remove<span class="visually-hidden"> ${u.name}</span></button></form>`;
}

interface UserForm {
  name: string;
  email: string;
  role?: string;
}

async function usersPage(
  ctx: DashboardContext,
  s: DashboardSession,
  o: { values?: UserForm; errors?: FieldErrors; done?: string; passwordErrors?: FieldErrors; roleError?: string } = {},
) {
  const users = await ctx.services.accounts.listUsers(s.orgId);
  const admin = s.userRole === 'admin';
  const others = users.filter((u) => u.id !== s.userId);
  const values = o.values ?? { name: '', email: '' };
  const errors = o.errors ?? {};
  return page({
    title: 'Users',
    session: s,
    active: 'users',
    body: html`<h1>Users</h1>
${o.done ? notice('ok', html`<p>${o.done}</p>`) : ''}
<p>The people of your organization. Loads’ sales and dispatcher reps are matched to these users by email (or by a unique name).</p>
<div class="table-wrap"><table>
  <caption>${users.length} user${users.length === 1 ? '' : 's'}</caption>
  <thead><tr><th scope="col">Name</th><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Dashboard sign-in</th><th scope="col">Added</th>${admin ? html`<th scope="col">Access</th>` : ''}</tr></thead>
  <tbody>${users.map(
    (u) => html`<tr><th scope="row">${u.name}${u.id === s.userId ? html` <span class="badge">you</span>` : ''}</th><td>${u.email}</td>
    <td>${u.role}${
      admin
        ? html`<form class="inline" method="post" action="/users/${segment(u.id)}/role">${csrfField(s.csrfToken)}<input type="hidden" name="role" value="${u.role === 'admin' ? 'member' : 'admin'}"><button type="submit" class="small secondary">Make ${u.role === 'admin' ? 'member' : 'admin'}<span class="visually-hidden"> ${u.name}</span></button></form>`
        : ''
    }</td>
    <td>${u.password_hash ? 'Yes' : html`<span class="muted">No</span>`}</td><td class="nowrap">${utc(u.created_at)}</td>${admin ? html`<td>${u.id === s.userId ? '' : accessButtons(s, u)}</td>` : ''}</tr>`,
  )}</tbody>
</table></div>
${o.roleError ? notice('error', html`<p>${o.roleError}</p>`, 'alert') : ''}
${admin ? html`<p>End sessions signs a user out of every browser at once; Remove deletes the user (the organization’s API keys stay, the audit log keeps who removed whom). The command line does the same: <code>bin/lanebridge user sessions-end</code>, <code>bin/lanebridge user remove</code>.</p>` : ''}
<p><a href="/account/password">Change your own password</a> (it asks for your current one).</p>
${
  admin
    ? html`<section class="card" aria-labelledby="add-user-title">
  <h2 id="add-user-title">Add a user</h2>
  ${errorSummary(errors)}
  <form class="stack" method="post" action="/users" novalidate>
    ${csrfField(s.csrfToken)}
    ${field({ name: 'name', label: 'Name', value: values.name, errors, required: true, autocomplete: 'off', maxlength: 255 })}
    ${field({ name: 'email', label: 'Email', type: 'email', value: values.email, errors, required: true, autocomplete: 'off', maxlength: 255 })}
    <div><label for="f-role">Role</label>
    <select id="f-role" name="role"><option value="member"${values.role !== 'admin' ? html` selected` : ''}>Member: reads every page, changes nothing of users, keys, webhooks, imports or settings</option>
    <option value="admin"${values.role === 'admin' ? html` selected` : ''}>Admin: also manages users, keys, webhooks, imports and settings</option></select></div>
    ${field({
      name: 'password',
      label: 'Password (optional)',
      type: 'password',
      errors,
      autocomplete: 'new-password',
      hint: `Lets this user sign in to the dashboard; at least ${MIN_PASSWORD_LENGTH} characters. Leave it empty for someone who is only matched to loads.`,
    })}
    <div><button type="submit">Add user</button></div>
  </form>
</section>
<section class="card" aria-labelledby="set-password-title">
  <h2 id="set-password-title">Set a password</h2>
  <p>Lets another user of your organization sign in (one added without a password, or who forgot it). The command line does the same: <code>bin/lanebridge user set-password</code>. Your own password: <a href="/account/password">Change your password</a>.</p>
  ${errorSummary(o.passwordErrors ?? {})}
  ${
    others.length
      ? html`<form class="stack" method="post" action="/users/password" novalidate>
    ${csrfField(s.csrfToken)}
    <div><label for="f-user_id">User</label>
    <select id="f-user_id" name="user_id">${others.map((u) => html`<option value="${u.id}">${u.name} (${u.email})</option>`)}</select></div>
    ${field({ name: 'new_password', label: 'New password', type: 'password', errors: o.passwordErrors ?? {}, required: true, autocomplete: 'new-password', hint: `At least ${MIN_PASSWORD_LENGTH} characters.` })}
    <div><button type="submit">Set password</button></div>
  </form>`
      : html`<p>There is no other user yet.</p>`
  }
</section>`
    : adminOnlyNote('add users, change roles or set other users’ passwords')
}`,
  });
}

const DONE: Record<string, string> = {
  added: 'The user is added.',
  password: 'The password is set: that user can sign in with it. Their sessions have ended everywhere.',
  role: 'The role is changed. It holds from that user’s next request.',
  'sessions-ended': 'That user is signed out everywhere: their sessions have ended.',
  removed: 'The user is removed. The organization’s API keys are unchanged; the audit log records the removal.',
};

async function showUsers(ctx: DashboardContext, req: FastifyRequest, reply: FastifyReply, s: DashboardSession) {
  return sendPage(reply, await usersPage(ctx, s, { done: doneMessage(req, DONE) }));
}

async function addUser(ctx: DashboardContext, req: FastifyRequest, reply: FastifyReply, s: DashboardSession) {
  const values = { name: formText(req.body, 'name').trim(), email: formText(req.body, 'email').trim(), role: formText(req.body, 'role') || 'member' };
  const password = formText(req.body, 'password');
  const errors: FieldErrors = {};
  if (!values.name) errors.name = 'Enter the user’s name.';
  else if (values.name.length > 255) errors.name = 'Use at most 255 characters for the name.';
  if (!/^[^\s@]+@[^\s@]+$/.test(values.email) || values.email.length > 255) errors.email = 'Enter an email address, like name@example.com.';
  const pw = password ? passwordProblem(password) : null;
  if (pw) errors.password = pw;
  if (!isRole(values.role)) errors.role = 'Choose admin or member.';
  if (Object.keys(errors).length) return sendPage(reply, await usersPage(ctx, s, { values, errors }), 422);
  try {
    await ctx.services.accounts.createUser(
      s.orgId,
      { name: values.name, email: values.email, role: isRole(values.role) ? values.role : 'member', ...(password ? { password } : {}) },
      actorOf(req, s),
    );
  } catch (err) {
    // Emails are the sign-in identity across organizations; another organization's is not named, nor
    // said to exist: the form says only that this address cannot be used (docs/dashboard.md).
    if (err instanceof EmailTakenError && err.inOrganization) {
      return sendPage(
        reply,
        await usersPage(ctx, s, { values, errors: { email: 'A user with this email is already in your organization (listed above).' } }),
        409,
      );
    }
    if (err instanceof EmailTakenError) {
      return sendPage(
        reply,
        await usersPage(ctx, s, { values, errors: { email: 'This email address cannot be used for a new user. Use another address for this person.' } }),
        422,
      );
    }
    if (err instanceof ValidationError)
      return sendPage(reply, await usersPage(ctx, s, { values, errors: fieldErrorsOf(err, { name: 'name', email: 'email', password: 'password' }) }), 422);
    throw err;
  }
  return reply.redirect('/users?done=added', 303);
}

async function setPassword(ctx: DashboardContext, req: FastifyRequest, reply: FastifyReply, s: DashboardSession) {
  const user = await ctx.services.accounts.findUser(s.orgId, formText(req.body, 'user_id'));
  const password = formText(req.body, 'new_password');
  if (!user) return sendPage(reply, await usersPage(ctx, s, { passwordErrors: { new_password: 'Choose a user of your organization.' } }), 422);
  // One's own password needs the current one
  // (docs/dashboard.md, "Roles, the first run and the audit log"): not here.
  if (user.id === s.userId)
    return sendPage(
      reply,
      await usersPage(ctx, s, { passwordErrors: { new_password: 'To change your own password, use Change your password: it asks for your current one.' } }),
      403,
    );
  try {
    await ctx.services.accounts.setUserPasswordByAdmin(s.orgId, s.userId, user.id, password, actorOf(req, s));
  } catch (err) {
    if (err instanceof ValidationError)
      return sendPage(reply, await usersPage(ctx, s, { passwordErrors: fieldErrorsOf(err, { password: 'new_password' }) }), 422);
    throw err;
  }
  return reply.redirect('/users?done=password', 303);
}

async function setRole(ctx: DashboardContext, req: FastifyRequest, reply: FastifyReply, s: DashboardSession) {
  const id = idParam(req.params);
  try {
    await ctx.services.accounts.setRole(s.orgId, id, formText(req.body, 'role'), actorOf(req, s));
  } catch (err) {
    if (err instanceof ConflictError) return sendPage(reply, await usersPage(ctx, s, { roleError: err.detail }), 409);
    if (err instanceof ValidationError) return sendPage(reply, await usersPage(ctx, s, { roleError: err.issues[0]?.msg ?? 'Choose admin or member.' }), 422);
    throw err;
  }
  return reply.redirect('/users?done=role', 303);
}

async function endSessions(ctx: DashboardContext, req: FastifyRequest, reply: FastifyReply, s: DashboardSession) {
  await ctx.services.accounts.endSessions(s.orgId, idParam(req.params), actorOf(req, s));
  return reply.redirect('/users?done=sessions-ended', 303);
}

async function removeUser(ctx: DashboardContext, req: FastifyRequest, reply: FastifyReply, s: DashboardSession) {
  const id = idParam(req.params);
  // Not oneself here: an admin signing themselves out of existence by a stray click (another admin can).
  if (id === s.userId) return sendPage(reply, await usersPage(ctx, s, { roleError: 'You cannot remove yourself: ask another admin.' }), 409);
  try {
    await ctx.services.accounts.removeUser(s.orgId, id, actorOf(req, s));
  } catch (err) {
    if (err instanceof ConflictError) return sendPage(reply, await usersPage(ctx, s, { roleError: err.detail }), 409);
    throw err;
  }
  return reply.redirect('/users?done=removed', 303);
}

/** The Users page: add users, set their passwords and roles, end their sessions, remove them. */
export function userRoutes(app: FastifyInstance, ctx: DashboardContext) {
  app.get(
    '/users',
    sessionPage((req, reply, s) => showUsers(ctx, req, reply, s)),
  );
  app.post(
    '/users',
    sessionForm((req, reply, s) => addUser(ctx, req, reply, s)),
  );
  app.post(
    '/users/password',
    sessionForm((req, reply, s) => setPassword(ctx, req, reply, s)),
  );
  app.post(
    '/users/:id/role',
    sessionForm((req, reply, s) => setRole(ctx, req, reply, s)),
  );
  app.post(
    '/users/:id/sessions/end',
    sessionForm((req, reply, s) => endSessions(ctx, req, reply, s)),
  );
  app.post(
    '/users/:id/remove',
    sessionForm((req, reply, s) => removeUser(ctx, req, reply, s)),
  );
}

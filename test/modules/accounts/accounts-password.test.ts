import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../src/lib/http/errors.js';
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH, passwordProblem } from '../../../src/modules/accounts/accounts.service.js';
import { useApp, newTenant } from '../../helpers.js';

// The password rule lives in the accounts service only: every write of a password checks it there,
// whichever front end (dashboard, CLI) sent it, with one message.

const t = useApp();

const RULE = `Use at least ${MIN_PASSWORD_LENGTH} characters: the password must have ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters.`;

async function refusal(work: Promise<unknown>) {
  const err = await work.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ValidationError);
  return (err as ValidationError).issues;
}

describe('the password rule', () => {
  it('has one message for too short and too long, and none within the bounds', () => {
    expect(passwordProblem('x'.repeat(MIN_PASSWORD_LENGTH - 1))).toBe(RULE);
    expect(passwordProblem('x'.repeat(MAX_PASSWORD_LENGTH + 1))).toBe(RULE);
    expect(passwordProblem('x'.repeat(MIN_PASSWORD_LENGTH))).toBeNull();
    expect(passwordProblem('x'.repeat(MAX_PASSWORD_LENGTH))).toBeNull();
  });

  it('is checked by every service write of a password, before anything is written', async () => {
    const a = await newTenant(t);
    const { accounts } = t.services;
    const email = `pw-${a.orgId}@example.test`;
    expect(await refusal(accounts.createUser(a.orgId, { email, name: 'Short', password: 'short' }))).toEqual([
      { type: 'value_error', loc: ['password'], msg: RULE },
    ]);
    expect((await accounts.listUsers(a.orgId)).map((u) => u.email)).not.toContain(email);
    await accounts.createUser(a.orgId, { email, name: 'No Password' });
    expect(await refusal(accounts.setPassword(email, 'x'.repeat(MAX_PASSWORD_LENGTH + 1)))).toEqual([{ type: 'value_error', loc: ['password'], msg: RULE }]);
    expect(await accounts.verifyCredentials(email, 'x'.repeat(MAX_PASSWORD_LENGTH + 1))).toBeNull();
    await accounts.setPassword(email, 'long enough now');
    expect(await accounts.verifyCredentials(email, 'long enough now')).toMatchObject({ email, org_id: a.orgId });
  });
});

// createCredentialRedactor: the JavaScript face of src/credentials (the rules are tested
// there; here: arguments, strings and values, errors).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createCredentialRedactor } from '../index.mjs'

test('secret-named environment values, extra secrets and credential shapes become [REDACTED]', () => {
  const r = createCredentialRedactor({
    env: { DEPLOY_TOKEN: 'tok-0123456789', HOME: '/home/someone', UNSET: undefined, DATABASE_URL: 'postgres://u:pw-123456@h/db' },
    secrets: ['link-secret-abc'],
  })
  const out = r.redact('tok-0123456789 /home/someone link-secret-abc pw-123456 AKIAIOSFODNN7EXAMPLE password=hunter2')
  assert.equal(out, '[REDACTED] /home/someone [REDACTED] [REDACTED] [REDACTED] password=[REDACTED]')
  assert.deepEqual(r.redact({ 'tok-0123456789': ['ghp_0123456789abcdefghijABCDEFGHIJ012345', 3, null] }), { '[REDACTED]': ['[REDACTED]', 3, null] })
  assert.equal(r.redact(undefined), undefined)
  // Without options: shapes only.
  assert.equal(createCredentialRedactor().redact('tok-0123456789 and xoxb-1234567890-abcdefghij'), 'tok-0123456789 and [REDACTED]')
  // process.env is accepted as it is.
  assert.equal(typeof createCredentialRedactor({ env: process.env }).redact('x'), 'string')
})

test('bad options are a TypeError, an oversized value a RangeError', () => {
  for (const bad of [null, 'env', [], { env: 'x' }, { env: [] }, { env: { A_KEY: 1 } }, { secrets: 'x' }, { secrets: [1] }]) {
    assert.throws(() => createCredentialRedactor(bad), TypeError, JSON.stringify(bad))
  }
  const cyclic = {}
  cyclic.self = cyclic
  assert.throws(() => createCredentialRedactor().redact(cyclic), TypeError)
  assert.throws(() => createCredentialRedactor().redact('x'.repeat(16 * 1024 * 1024 + 1)), RangeError)
})

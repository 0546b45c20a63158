import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import * as esm from '../index.js'
import esmDefault from '../index.mjs'
import * as esmNamed from '../index.mjs'

const require = createRequire(import.meta.url)
const cjs = require('../index.js')
const native = require('../binding.js')
const { callNative, callNativeAsync, translate } = require('../js/errors.js')

test('error classes survive instanceof and carry code and reason', () => {
  const { ArtifactError, CheckpointConflictError, CodingPatchReviewError, LanguageIntelligenceError, ArtifactBodyStoreError } = cjs
  const a = new ArtifactError('no such artifact', 'not_found')
  assert.ok(a instanceof ArtifactError)
  assert.ok(a instanceof Error)
  assert.equal(a.name, 'ArtifactError')
  assert.equal(a.code, 'ERR_PRISM_ARTIFACT')
  assert.equal(a.reason, 'not_found')
  assert.equal(a.message, 'no such artifact')
  assert.match(String(a.stack), /ArtifactError: no such artifact/)
  const c = new CheckpointConflictError()
  assert.equal(c.code, 'ERR_PRISM_CHECKPOINT_CONFLICT')
  assert.equal(c.name, 'CheckpointConflictError')
  assert.equal(new CodingPatchReviewError('INPUT', 'x').code, 'ERR_PRISM_REVIEW_INPUT')
  assert.equal(new CodingPatchReviewError('ERR_PRISM_REVIEW_LIMIT', 'x').code, 'ERR_PRISM_REVIEW_LIMIT')
  assert.equal(new LanguageIntelligenceError('TIMEOUT', 'x').code, 'ERR_PRISM_LSP_TIMEOUT')
  assert.equal(new ArtifactBodyStoreError('x', 'HELD').code, 'ERR_PRISM_ARTIFACT_BODY_HELD')
  assert.equal(new ArtifactBodyStoreError('x', 'HELD').reason, 'HELD')
})

test('CommonJS and ESM entries export the same objects', () => {
  for (const name of Object.keys(cjs)) {
    assert.ok(cjs[name] !== undefined, `cjs export ${name} is defined`)
    assert.equal(esmNamed[name], cjs[name], `ESM named export ${name} matches CommonJS`)
  }
  for (const name of Object.keys(esmNamed)) {
    if (name === 'default') continue
    assert.ok(name in cjs, `ESM export ${name} exists in CommonJS`)
  }
  assert.equal(esmDefault, cjs)
  assert.equal(esm.ArtifactError, cjs.ArtifactError)
})

test('a native typed error becomes its class', () => {
  assert.throws(
    () => callNative(native.debugPanic, 'error'),
    (e) => e instanceof cjs.CodingPatchReviewError && e.code === 'ERR_PRISM_REVIEW_INPUT' && e.message === 'deliberate typed error',
  )
  assert.equal(callNative(native.debugPanic, 'fine'), 'fine')
})

test('a Rust panic becomes an Error and the process lives on', async () => {
  for (let i = 0; i < 3; i++) {
    assert.throws(
      () => callNative(native.debugPanic, 'panic'),
      (e) => e instanceof Error && e.code === 'ERR_PRISM_INTERNAL' && /deliberate panic/.test(e.message),
    )
  }
  await assert.rejects(
    callNativeAsync(native.debugPanicAsync, 'panic'),
    (e) => e instanceof Error && e.code === 'ERR_PRISM_INTERNAL' && /deliberate async panic/.test(e.message),
  )
  assert.equal(await callNativeAsync(native.debugPanicAsync, 'ok'), 'ok')
})

test('translate leaves foreign errors alone and survives a corrupt payload', () => {
  const plain = new TypeError('x')
  assert.equal(translate(plain), plain)
  const corrupt = translate(new Error('\u001fPRISM{not json'))
  assert.equal(corrupt.code, 'ERR_PRISM_INTERNAL')
})

test('startCall (the raw entry of store and service calls) refuses what is not a call target, and wrong arguments, without a crash', () => {
  const { startCall, callPort } = require('../js/calls.js')
  const call = (...args) => callNative(() => startCall(...args))
  const target = native.createMemoryCheckpointStore('{}').callTarget(callPort())
  const key = JSON.stringify({ namespace: 'n', key: 'k' })
  // A real target answers at once (the memory store): a miss is `null`.
  assert.equal(call(target, 1, key, 1), 'null')
  const refused = (re) => (e) => e instanceof TypeError && re.test(e.message)
  for (const notTarget of [{}, null, 7, 'target', () => {}, native.createMemoryCheckpointStore('{}')]) {
    assert.throws(() => call(notTarget, 1, key, 1), refused(/not a call target/))
  }
  assert.throws(() => call(target, 1, key), refused(/takes \(target, op, input, token\)/))
  assert.throws(() => call(target, 'load', key, 1))
  assert.throws(() => call(target, 1, { namespace: 'n' }, 1))
  assert.throws(() => call(target, 99, key, 1), (e) => e instanceof Error && /unknown store operation 99/.test(e.message))
  // The same target keeps working after the refusals.
  assert.equal(call(target, 1, key, 2), 'null')
})

test('pollCompletions (the mailbox of a call port) refuses anything but a mailbox and a boolean, without a crash', () => {
  const { callPort } = require('../js/calls.js')
  const poll = native.completionPoller()
  const call = (...args) => callNative(() => poll(...args))
  const mailbox = new native.CallPort(() => {}).mailbox()
  assert.equal(call(mailbox, false), null, 'an empty mailbox answers null')
  const usage = (e) => e instanceof TypeError && /pollCompletions takes \(mailbox, polling\)/.test(e.message)
  // Another kind of external (a call target) is refused by its tag.
  const target = native.createMemoryCheckpointStore('{}').callTarget(callPort())
  for (const args of [[], [mailbox], [{}, false], [null, true], ['mailbox', true], [target, false], [() => {}, true]]) {
    assert.throws(() => call(...args), usage, `pollCompletions(${args.length} arguments)`)
  }
  assert.throws(() => call(mailbox, 'yes'))
  assert.equal(call(mailbox, false), null, 'the mailbox keeps working after the refusals')
})

// Compiles under tsc --strict: the credential redactor.
import { createCredentialRedactor, type CredentialRedactor, type CredentialRedactorOptions } from 'prism-review'

const options: CredentialRedactorOptions = { env: process.env, secrets: ['link-secret-value'] }
const redactor: CredentialRedactor = createCredentialRedactor(options)
const text: string = redactor.redact('output with AKIAIOSFODNN7EXAMPLE')
const value: { summary: string } = redactor.redact({ summary: text })
createCredentialRedactor()
createCredentialRedactor({ env: { API_TOKEN: 'x', UNSET: undefined } })
// @ts-expect-error secrets are strings
createCredentialRedactor({ secrets: [1] })
void value

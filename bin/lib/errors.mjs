// The two failures the command line reports on its own, beside the library's typed errors.
// Every failure ends as ONE line on stderr (see `describeError`) and an exit code:
//   2  bad usage: unknown command or flag, missing value, not a git repository, unknown or
//      missing base, a missing PRISM_REVIEW_TOKEN for `serve`
//   1  anything else that failed (and `status --require` when the state is not the one required)

/** Bad usage: the command line itself is wrong. Exit code 2. */
export class UsageError extends Error {
  constructor(message) {
    super(message)
    this.name = 'UsageError'
    this.exitCode = 2
  }
}

/** A failure the user can act on (a git command failed, the review is out of date, …). Exit code 1. */
export class CliError extends Error {
  constructor(message, exitCode = 1) {
    super(message)
    this.name = 'CliError'
    this.exitCode = exitCode
  }
}

const PARSE_CODES = {
  ERR_PARSE_ARGS_UNKNOWN_OPTION: (opt) => `unknown option ${opt}`,
  ERR_PARSE_ARGS_INVALID_OPTION_VALUE: (opt) => `option ${opt} needs a value`,
  ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL: (arg) => `unexpected argument ${arg}`,
}

/** Turns a node:util parseArgs error into a UsageError with a short message. */
export function fromParseArgsError(err, command) {
  const make = PARSE_CODES[err && err.code]
  if (!make) return err
  const quoted = /'([^']+)'/.exec(String(err.message))
  let subject = quoted ? quoted[1] : ''
  subject = subject.replace(/ <value>$/, '').replace(/^-[a-zA-Z], /, '')
  const where = command ? ` for "${command}"` : ''
  return new UsageError(`${make(subject || 'argument')}${where} (see prism-review help)`)
}

function oneLine(text) {
  return String(text)
    .replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, '')
    .split(/\r?\n/)
    .map((s) => s.trim())
    .filter(Boolean)
    .join(' ')
}

/** The one stderr line and the exit code for any thrown value. Never a stack trace. */
export function describeError(err) {
  if (err instanceof UsageError || err instanceof CliError) {
    return { line: `prism-review: ${oneLine(err.message)}`, exitCode: err.exitCode }
  }
  if (err && typeof err === 'object') {
    const code = typeof err.code === 'string' ? err.code : ''
    const reason = typeof err.reason === 'string' ? ` (${err.reason})` : ''
    const message = oneLine(err.message || String(err))
    if (code === 'ERR_PRISM_NATIVE_LOAD') {
      return {
        line: 'prism-review: the native addon is not built or not installed for this platform; run `npm install && npm run build` in the package folder',
        exitCode: 1,
      }
    }
    const prefix = code ? `${code}${reason}: ` : ''
    return { line: `prism-review: ${prefix}${message}`, exitCode: 1 }
  }
  return { line: `prism-review: ${oneLine(String(err))}`, exitCode: 1 }
}

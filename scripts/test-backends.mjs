// Which store backends the tests run against. Memory and SQLite always run; PostgreSQL runs
// against PRISM_TEST_POSTGRES_URL, or, when that is unset, against
// postgres://postgres@127.0.0.1:5432/test when a server answers there (the variable is
// then set for the test processes). In CI (CI=true, set by .ci/run) a backend that cannot
// run is a failure, not a skip.
import { connect } from 'node:net'
import { existsSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'

export const DEFAULT_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/test'

export function isCI(env = process.env) {
  return env.CI === 'true' || env.CI === '1'
}

/** The URL without its password, for printing. */
export function printableUrl(url) {
  try {
    const u = new URL(url)
    if (u.password) u.password = '***'
    return u.toString()
  } catch {
    return '(unparseable URL)'
  }
}

function answers(host, port, timeoutMs = 1500) {
  return new Promise((resolve) => {
    const socket = connect({ host, port })
    const done = (ok) => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(timeoutMs, () => done(false))
    socket.once('connect', () => done(true))
    socket.once('error', () => done(false))
  })
}

/**
 * Resolves the backends, sets PRISM_TEST_POSTGRES_URL when the default server answers, and
 * returns `[{ name, runs, detail }]`.
 */
export async function resolveBackends(env = process.env) {
  const list = [
    { name: 'memory', runs: true, detail: 'in process' },
    { name: 'sqlite', runs: true, detail: 'temporary files' },
  ]
  if (env.PRISM_TEST_POSTGRES_URL) {
    list.push({ name: 'postgresql', runs: true, detail: `${printableUrl(env.PRISM_TEST_POSTGRES_URL)} (PRISM_TEST_POSTGRES_URL)` })
  } else if (await answers('127.0.0.1', 5432)) {
    env.PRISM_TEST_POSTGRES_URL = DEFAULT_POSTGRES_URL
    list.push({ name: 'postgresql', runs: true, detail: `${DEFAULT_POSTGRES_URL} (the default: a server answered there)` })
  } else {
    list.push({
      name: 'postgresql',
      runs: false,
      detail: 'SKIPPED: PRISM_TEST_POSTGRES_URL is unset and no server answers at 127.0.0.1:5432 (see README, "Develop")',
    })
  }
  // s3s-fs, the S3-compatible server the body store suites run against (README, "Develop").
  const s3s = env.PRISM_S3S_FS || join(homedir(), '.cache', 'prism-review', 's3s-fs', 'bin', 's3s-fs')
  if (existsSync(s3s)) {
    env.PRISM_S3S_FS = s3s
    list.push({ name: 's3 (s3s-fs)', runs: true, detail: s3s })
  } else {
    list.push({ name: 's3 (s3s-fs)', runs: false, detail: `SKIPPED: no s3s-fs at ${s3s} (set PRISM_S3S_FS; see README, "Develop")` })
  }
  return list
}

export function describeBackends(list) {
  return list.map((b) => `  ${b.name.padEnd(11)} ${b.runs ? 'runs' : 'does not run'}: ${b.detail}`).join('\n')
}

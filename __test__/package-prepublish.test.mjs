// scripts/prepublish.mjs (`prepublishOnly`): publishing is refused unless every platform
// package has its binary, of the right format and machine, at the root's version.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { checkBinaryFormat, platformTargets, publishProblems, publishedRootManifest, TEST_ONLY_EXPORTS, testExportsIn } from '../scripts/prepublish.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
const targets = platformTargets(pkg)
const tmp = mkdtempSync(join(tmpdir(), 'prism-prepublish-'))
after(() => rmSync(tmp, { recursive: true, force: true }))
const byPlatform = (p) => targets.find((t) => t.platform === p)

// A header-only binary of each kind, large enough to pass the size floor.
function fakeBinary({ os, cpu, abi }) {
  const buf = Buffer.alloc(8192)
  if (os === 'linux') {
    buf.writeUInt32BE(0x7f454c46, 0)
    buf[4] = 2
    buf[5] = 1
    buf.writeUInt16LE({ x64: 0x3e, arm64: 0xb7 }[cpu], 18)
    buf.write(abi === 'gnu' ? 'libc.so.6\0GLIBC_2.17\0' : 'libc.so\0', 4096, 'latin1')
  } else if (os === 'darwin') {
    buf.writeUInt32LE(0xfeedfacf, 0)
    buf.writeUInt32LE({ x64: 0x01000007, arm64: 0x0100000c }[cpu], 4)
  } else {
    buf.write('MZ', 0, 'latin1')
    buf.writeUInt32LE(0x80, 0x3c)
    buf.writeUInt32BE(0x50450000, 0x80)
    buf.writeUInt16LE({ x64: 0x8664, arm64: 0xaa64 }[cpu], 0x84)
  }
  return buf
}

let n = 0
// A copy of what a publish sees: manifests, Cargo.toml, binding.js, npm/<platform>/ with binaries.
function stage() {
  const dir = join(tmp, `repo-${n++}`)
  for (const f of ['package.json', 'Cargo.toml', 'binding.js', 'LICENSE', 'README.md', 'index.js', 'index.mjs', 'index.d.ts']) cpSync(join(root, f), join(dir, f))
  for (const d of ['js', 'types']) cpSync(join(root, d), join(dir, d), { recursive: true })
  for (const t of targets) {
    mkdirSync(join(dir, 'npm', t.platform), { recursive: true })
    for (const f of ['package.json', 'README.md']) cpSync(join(root, 'npm', t.platform, f), join(dir, 'npm', t.platform, f))
    writeFileSync(join(dir, 'npm', t.platform, `prism-review.${t.platform}.node`), fakeBinary(t))
  }
  return dir
}
const editJson = (file, edit) => writeFileSync(file, JSON.stringify(edit(JSON.parse(readFileSync(file, 'utf8'))), null, 2))

test('the targets are the seven platform packages, each an optional dependency when published', () => {
  assert.deepEqual(targets.map((t) => t.platform).sort(), [
    'darwin-arm64', 'darwin-x64', 'linux-arm64-gnu', 'linux-arm64-musl', 'linux-x64-gnu', 'linux-x64-musl', 'win32-x64-msvc',
  ])
  assert.equal(pkg.optionalDependencies, undefined, 'added at publish time only, so that npm ci works')
  const published = publishedRootManifest(pkg)
  assert.deepEqual(Object.keys(published.optionalDependencies).sort(), targets.map((t) => `prism-review-${t.platform}`).sort())
  assert.ok(Object.values(published.optionalDependencies).every((v) => v === pkg.version))
})

test('a complete, consistent set of platform packages passes', () => {
  assert.deepEqual(publishProblems(stage()), [])
})

test('a missing binary, a version mismatch, a wrong machine or libc are each refused', () => {
  const missing = stage()
  unlinkSync(join(missing, 'npm', 'darwin-x64', 'prism-review.darwin-x64.node'))
  assert.deepEqual(publishProblems(missing), [
    'npm/darwin-x64/prism-review.darwin-x64.node is missing (build it, or download the CI artifacts and run napi artifacts)',
  ])

  const version = stage()
  editJson(join(version, 'npm', 'linux-arm64-musl', 'package.json'), (p) => ({ ...p, version: '0.0.9' }))
  assert.deepEqual(publishProblems(version), [`npm/linux-arm64-musl: version 0.0.9 differs from the root's ${pkg.version}`])

  const machine = stage()
  writeFileSync(join(machine, 'npm', 'linux-x64-gnu', 'prism-review.linux-x64-gnu.node'), fakeBinary(byPlatform('linux-arm64-gnu')))
  writeFileSync(join(machine, 'npm', 'darwin-arm64', 'prism-review.darwin-arm64.node'), fakeBinary(byPlatform('darwin-x64')))
  writeFileSync(join(machine, 'npm', 'win32-x64-msvc', 'prism-review.win32-x64-msvc.node'), fakeBinary(byPlatform('linux-x64-gnu')))
  const problems = publishProblems(machine)
  assert.equal(problems.length, 3)
  assert.match(problems[0], /linux-x64-gnu\.node is built for ELF machine 0xb7, not x64/)
  assert.match(problems[1], /darwin-arm64\.node is built for Mach-O CPU 0x1000007, not arm64/)
  assert.match(problems[2], /win32-x64-msvc\.node is not a PE file/)

  const libc = stage()
  writeFileSync(join(libc, 'npm', 'linux-x64-musl', 'prism-review.linux-x64-musl.node'), fakeBinary(byPlatform('linux-x64-gnu')))
  writeFileSync(join(libc, 'npm', 'linux-arm64-gnu', 'prism-review.linux-arm64-gnu.node'), fakeBinary(byPlatform('linux-arm64-musl')))
  assert.deepEqual(publishProblems(libc).map((p) => p.replace(/^.*npm\//, 'npm/')), [
    'npm/linux-arm64-gnu/prism-review.linux-arm64-gnu.node does not link glibc',
    'npm/linux-x64-musl/prism-review.linux-x64-musl.node links glibc, not musl',
  ])
})

test('manifest fields, Cargo.toml and binding.js must agree with the root', () => {
  const dir = stage()
  editJson(join(dir, 'npm', 'linux-x64-musl', 'package.json'), (p) => ({ ...p, libc: ['glibc'], cpu: ['arm64'] }))
  editJson(join(dir, 'npm', 'darwin-x64', 'package.json'), (p) => ({ ...p, name: 'prism-review-darwin', files: [] }))
  writeFileSync(join(dir, 'Cargo.toml'), readFileSync(join(dir, 'Cargo.toml'), 'utf8').replace(/^version = ".*"$/m, 'version = "9.9.9"'))
  writeFileSync(join(dir, 'binding.js'), readFileSync(join(dir, 'binding.js'), 'utf8').replaceAll(`expected ${pkg.version} but`, 'expected 0.0.1 but'))
  assert.deepEqual(publishProblems(dir), [
    `Cargo.toml version 9.9.9 differs from package.json ${pkg.version}`,
    `binding.js expects another version than ${pkg.version}: rebuild it`,
    'npm/linux-x64-musl: cpu ["arm64"], expected ["x64"]',
    'npm/linux-x64-musl: libc ["glibc"], expected ["musl"]',
    'npm/darwin-x64: name prism-review-darwin, expected prism-review-darwin-x64',
    'npm/darwin-x64: files [], expected ["prism-review.darwin-x64.node"]',
  ])
  unlinkSync(join(dir, 'binding.js'))
  assert.ok(publishProblems(dir).includes('binding.js is missing: run `npm run build` (napi build --platform --js binding.js)'))
})

test('the packed root may ship no binary, source, test or build output', () => {
  const dir = stage()
  const packed = ['LICENSE', 'README.md', 'binding.js', 'index.d.ts', 'index.js', 'index.mjs', 'js/native.js', 'package.json', 'types/errors.d.ts']
  assert.deepEqual(publishProblems(dir, { packedFiles: packed }), [])
  assert.deepEqual(
    publishProblems(dir, { packedFiles: [...packed, 'prism-review.linux-x64-gnu.node', 'src/lib.rs', '__test__/a.test.mjs', 'target/release/x'] }),
    [
      'the root package would ship prism-review.linux-x64-gnu.node',
      'the root package would ship src/lib.rs',
      'the root package would ship __test__/a.test.mjs',
      'the root package would ship target/release/x',
    ],
  )
  assert.ok(publishProblems(dir, { packedFiles: packed.filter((f) => f !== 'binding.js') }).includes('the root package would not ship binding.js'))
})

test('the host build passes the format check for its own platform', () => {
  const hostBinary = readdirSync(root).find((f) => /^prism-review\.[a-z0-9-]+\.node$/.test(f))
  assert.ok(hostBinary, 'run `npm run build` first')
  const t = byPlatform(hostBinary.split('.')[1])
  assert.equal(checkBinaryFormat(join(root, hostBinary), t), null)
  const other = targets.find((x) => x.os === t.os && x.cpu !== t.cpu) ?? targets.find((x) => x.os !== t.os)
  assert.notEqual(checkBinaryFormat(join(root, hostBinary), other), null)
})

// The JS names of the napi items under #[cfg(feature = "test-exports")] in src/napi/.
function gatedExports() {
  const camel = (s) => s.replace(/_([a-z])/g, (_, c) => c.toUpperCase())
  const names = []
  const dir = join(root, 'src', 'napi')
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.rs'))) {
    for (const part of readFileSync(join(dir, f), 'utf8').split('#[cfg(feature = "test-exports")]').slice(1)) {
      const item = part.slice(0, part.indexOf('\n}'))
      for (const m of item.matchAll(/#\[napi(?:_derive::napi)?(?:\(([^)]*)\))?\]\s*pub (?:async )?fn (\w+)/g)) {
        names.push(/js_name = "(\w+)"/.exec(m[1] ?? '')?.[1] ?? camel(m[2]))
      }
    }
  }
  return names.sort()
}

test('a development build (with the test-only exports) is refused; the list is what the Cargo feature gates', () => {
  assert.deepEqual(gatedExports(), [...TEST_ONLY_EXPORTS].sort())
  const hostBinary = readdirSync(root).find((f) => /^prism-review\.[a-z0-9-]+\.node$/.test(f))
  assert.deepEqual(testExportsIn(join(root, hostBinary)), TEST_ONLY_EXPORTS, '`npm run build` compiles them in')

  const dir = stage()
  const dev = fakeBinary(byPlatform('linux-arm64-gnu'))
  dev.write('integrityCheck\0diagnosticsNormalizeJson\0', 6000, 'latin1')
  writeFileSync(join(dir, 'npm', 'linux-arm64-gnu', 'prism-review.linux-arm64-gnu.node'), dev)
  assert.deepEqual(publishProblems(dir), [
    'npm/linux-arm64-gnu/prism-review.linux-arm64-gnu.node is a development build (it exports integrityCheck, diagnosticsNormalizeJson): build it with npm run build:cross',
  ])
})

test('`prepublishOnly` exits 1 listing the problems, and passes a complete checkout', () => {
  const script = join(root, 'scripts', 'prepublish.mjs')
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)))
  const ok = stage()
  let r = spawnSync(process.execPath, [script, '--check-only', `--root=${ok}`], { encoding: 'utf8', env })
  assert.equal(r.status, 0, r.stderr)
  assert.match(r.stdout, /every platform package is complete and consistent/)

  const bad = stage()
  unlinkSync(join(bad, 'npm', 'win32-x64-msvc', 'prism-review.win32-x64-msvc.node'))
  editJson(join(bad, 'npm', 'darwin-arm64', 'package.json'), (p) => ({ ...p, version: '2.0.0' }))
  r = spawnSync(process.execPath, [script, '--check-only', `--root=${bad}`], { encoding: 'utf8', env })
  assert.equal(r.status, 1)
  assert.match(r.stderr, /refusing to publish because of 2 problems/)
  assert.match(r.stderr, /npm\/darwin-arm64: version 2\.0\.0 differs/)
  assert.match(r.stderr, /win32-x64-msvc\.node is missing/)
})

test('the loader error knows the same prebuilt platforms as napi.targets', () => {
  const native = readFileSync(join(root, 'js', 'native.js'), 'utf8')
  const list = native.match(/const PREBUILT = \[([^\]]*)\]/)
  assert.ok(list, 'js/native.js lists PREBUILT')
  const prebuilt = [...list[1].matchAll(/'([a-z0-9-]+)'/g)].map((m) => m[1]).sort()
  assert.deepEqual(prebuilt, targets.map((t) => t.platform).sort())
})

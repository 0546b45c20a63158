// The package as users get it: `npm pack` of the root and of this platform's binary package,
// installed offline into a clean temporary project, then the seeds' examples run from there in
// CommonJS, ESM and TypeScript (tsc --strict). Also: the root installed without any binary
// fails with the one ERR_PRISM_NATIVE_LOAD error.
//
// The platform package gets the host build (`prism-review.<platform>.node` in the repository
// root, which `npm test` builds first); with PRISM_PACKAGE_PLATFORM=<platform> it gets the
// prebuilt npm/<platform>/prism-review.<platform>.node instead (CI's check of each binary it
// built, on that binary's own platform).
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { publishedRootManifest, ROOT_FILES } from '../scripts/prepublish.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const fixtures = join(root, '__test__', 'fixtures', 'package')
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
const win = process.platform === 'win32'
const tmp = mkdtempSync(join(tmpdir(), 'prism-package-'))
after(() => rmSync(tmp, { recursive: true, force: true }))

// npm without the lifecycle variables of the `npm test` that runs this file, with its own
// empty cache: every install below must work with no network and nothing cached.
const npmEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)))
npmEnv.npm_config_cache = join(tmp, 'npm-cache')
npmEnv.npm_config_update_notifier = 'false'
function npm(args, cwd) {
  const r = spawnSync(win ? 'npm.cmd' : 'npm', args, { cwd, env: npmEnv, encoding: 'utf8', shell: win })
  if (r.status !== 0) throw new Error(`npm ${args.join(' ')} failed (${r.status}):\n${r.stdout}\n${r.stderr}`)
  return r.stdout
}
function node(args, cwd) {
  return spawnSync(process.execPath, args, { cwd, encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } })
}
function pack(dir) {
  const [info] = JSON.parse(npm(['pack', dir, '--json', '--ignore-scripts', '--pack-destination', tmp], tmp))
  return { tarball: join(tmp, info.filename), files: info.files.map((f) => f.path).sort(), size: info.size, unpackedSize: info.unpackedSize }
}
function project(name) {
  const dir = join(tmp, name)
  mkdirSync(dir)
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, version: '1.0.0', private: true }))
  return dir
}
const offline = ['install', '--offline', '--no-audit', '--no-fund', '--no-package-lock', '--loglevel=error']

// The platform of the host build (prism-review.<platform>.node in the repository root), or
// the prebuilt binary CI asks for.
const prebuilt = process.env.PRISM_PACKAGE_PLATFORM
const hostBinary = readdirSync(root).find((f) => /^prism-review\.[a-z0-9-]+\.node$/.test(f))
const platform = prebuilt || (hostBinary && hostBinary.split('.')[1])
const binaryName = `prism-review.${platform}.node`
const binary = prebuilt ? join(root, 'npm', platform, binaryName) : hostBinary && join(root, hostBinary)

let rootPack
let published
let platformPack

before(() => {
  assert.ok(binary && existsSync(binary), `no binary: run \`npm run build\` (${binary ?? 'prism-review.<platform>.node'})`)
  assert.ok(existsSync(join(root, 'npm', platform, 'package.json')), `npm/${platform} is not a platform package of this repository`)

  // 1. The root exactly as `npm pack` / `npm publish` packs it from the repository.
  rootPack = pack(root)

  // 2. The same files with the manifest `napi prepublish` publishes: every platform package as
  //    an optional dependency (none of them is in the registry or the cache here).
  const stage = join(tmp, 'stage-root')
  for (const f of rootPack.files) cpSync(join(root, f), join(stage, f))
  writeFileSync(join(stage, 'package.json'), JSON.stringify(publishedRootManifest(pkg), null, 2))
  published = pack(stage)

  // 3. This platform's package with its binary.
  const platformStage = join(tmp, `stage-${platform}`)
  mkdirSync(platformStage)
  for (const f of ['package.json', 'README.md']) cpSync(join(root, 'npm', platform, f), join(platformStage, f))
  cpSync(join(root, 'LICENSE'), join(platformStage, 'LICENSE'))
  cpSync(binary, join(platformStage, binaryName))
  platformPack = pack(platformStage)
})

test('the root tarball holds only what users need', () => {
  for (const f of rootPack.files) assert.ok(ROOT_FILES.some((re) => re.test(f)), `the root tarball must not ship ${f}`)
  for (const f of ['package.json', 'README.md', 'LICENSE', 'index.js', 'index.mjs', 'index.d.ts', 'binding.js', 'js/native.js', 'js/errors.js', 'types/errors.d.ts']) {
    assert.ok(rootPack.files.includes(f), `the root tarball must ship ${f}`)
  }
  assert.ok(!rootPack.files.some((f) => f.endsWith('.node')), 'no binary in the root tarball: it comes from the platform package')
  // Every module the entry points load is shipped.
  for (const f of readdirSync(join(root, 'js'))) assert.ok(rootPack.files.includes(`js/${f}`), `js/${f} is not shipped`)
  for (const f of readdirSync(join(root, 'types'))) assert.ok(rootPack.files.includes(`types/${f}`), `types/${f} is not shipped`)
  // The README links the API pages: they ship with it.
  for (const f of readdirSync(join(root, 'docs'))) assert.ok(rootPack.files.includes(`docs/${f}`), `docs/${f} is not shipped`)
  assert.deepEqual(published.files, rootPack.files)
})

test('the platform tarball holds the binary, its manifest, README and license', () => {
  assert.deepEqual(platformPack.files, ['LICENSE', 'README.md', binaryName, 'package.json'].sort())
})

test('installed offline, the seeds examples run in CommonJS, ESM and TypeScript', () => {
  const dir = project('consumer')
  npm([...offline, published.tarball, platformPack.tarball], dir)
  const installed = join(dir, 'node_modules')
  assert.ok(existsSync(join(installed, `prism-review-${platform}`, binaryName)))
  assert.ok(!readdirSync(join(installed, 'prism-review')).some((f) => f.endsWith('.node')))
  // No other platform package could be fetched: each optional dependency was skipped.
  assert.deepEqual(readdirSync(installed).filter((f) => f.startsWith('prism-review')).sort(), ['prism-review', `prism-review-${platform}`])

  for (const f of readdirSync(fixtures)) cpSync(join(fixtures, f), join(dir, f))
  for (const [file, expected] of [['example.cjs', 'cjs ok: accepted v1, +1 -1'], ['example.mjs', 'esm ok: accepted v1, +1 -1']]) {
    const r = node([file], dir)
    assert.equal(r.status, 0, `${file}:\n${r.stdout}\n${r.stderr}`)
    assert.equal(r.stdout.trim(), expected)
  }

  // TypeScript: the project's compiler, node types from the repository, strict, NodeNext.
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        lib: ['ES2022'], // a Node project: no DOM; Request/Response come from @types/node
        types: ['node'],
        typeRoots: [join(root, 'node_modules', '@types')],
        skipLibCheck: false,
        outDir: 'dist',
      },
      files: ['example.mts', 'example-require.cts'],
    }),
  )
  const tsc = node([join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], dir)
  assert.equal(tsc.status, 0, `tsc --strict:\n${tsc.stdout}\n${tsc.stderr}`)
  for (const [file, expected] of [['dist/example.mjs', 'ts ok: accepted v1, +1 -1'], ['dist/example-require.cjs', 'cts ok']]) {
    const r = node([file], dir)
    assert.equal(r.status, 0, `${file}:\n${r.stdout}\n${r.stderr}`)
    assert.equal(r.stdout.trim(), expected)
  }
})

test('without a binary, loading fails with the one ERR_PRISM_NATIVE_LOAD error', () => {
  const dir = project('no-binary')
  npm([...offline, published.tarball], dir)
  assert.ok(!existsSync(join(dir, 'node_modules', `prism-review-${platform}`)))
  const script = (load) => `
    ${load}.then(
      () => { console.log('loaded'); process.exit(3) },
      (e) => { console.log(JSON.stringify({ code: e.code, message: e.message, name: e.name })); },
    )`
  for (const load of ["Promise.resolve().then(() => require('prism-review'))", "import('prism-review')"]) {
    const r = node(['-e', script(load)], dir)
    assert.equal(r.status, 0, r.stderr)
    const e = JSON.parse(r.stdout)
    assert.equal(e.code, 'ERR_PRISM_NATIVE_LOAD')
    assert.equal(e.name, 'Error')
    assert.match(e.message, new RegExp(`no native binary could be loaded for ${process.platform}-${process.arch}`))
    assert.match(e.message, new RegExp(`prism-review-${platform}`), 'the error names the package to install')
    assert.match(e.message, /npm run build/, 'the error says how to build from source')
  }
})

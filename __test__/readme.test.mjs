// Runs every example marked `<!-- example -->` (the ```js block right after the marker) in
// README.md and the API pages in docs/ as an ES module that imports 'prism-review' by name,
// so the examples users copy are the examples we test. An example passes when it runs without throwing; examples use
// node:assert to state what they show.
import { test } from 'node:test'
import { readFileSync, readdirSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs'
import { join, dirname } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const pages = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)]
const blocks = pages.flatMap((page) =>
  [...readFileSync(join(root, page), 'utf8').matchAll(/<!-- example -->\s*```js\n([\s\S]*?)```/g)].map((m) => ({ page, code: m[1] })),
)

test('the documentation has tested examples', () => {
  if (blocks.length === 0) throw new Error('no <!-- example --> blocks in README.md or docs/')
})

for (const [i, { page, code }] of blocks.entries()) {
  const firstLine = code.split('\n').find((l) => l.startsWith('//')) ?? `example ${i + 1}`
  test(`${page} example ${i + 1}: ${firstLine.replace(/^\/\/\s*/, '')}`, async () => {
    // Inside the package folder so that `import 'prism-review'` resolves by self-reference.
    const dir = mkdtempSync(join(root, '__test__', '.readme-'))
    try {
      const file = join(dir, `example-${i + 1}.mjs`)
      writeFileSync(file, code)
      await import(pathToFileURL(file).href)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
}

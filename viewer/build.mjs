// Bundle the page into the Python package (bridge/clients/viewer/static/, gitignored; the wheel carries it).
import { build } from 'esbuild';
import { copyFileSync, mkdirSync } from 'node:fs';

const out = new URL('../bridge/clients/viewer/static/', import.meta.url);
mkdirSync(out, { recursive: true });
await build({
  entryPoints: [new URL('src/main.js', import.meta.url).pathname],
  bundle: true,
  minify: true,
  format: 'iife',
  target: 'es2020',
  legalComments: 'linked',
  outfile: new URL('viewer.js', out).pathname,
  logLevel: 'warning',
});
copyFileSync(new URL('index.html', import.meta.url), new URL('index.html', out));

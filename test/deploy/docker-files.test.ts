import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ROOT } from '../helpers/weir-process.ts';

// There is no Docker engine in CI, so the Dockerfile and docker-compose.yml
// are held to the commands CI does run outside Docker: the same `npm ci`
// (flags included) and the same `npm start`, which is what the tests spawn.
// Change one without the other and this fails, so neither can rot alone.

const read = (f: string) => readFileSync(join(ROOT, f), 'utf8');
const words = (line: string) => line.trim().split(/\s+/);

function npmCiFlags(text: string, where: string): string[] {
  const lines = text.split('\n').filter((l) => /\bnpm ci\b/.test(l) && !l.trim().startsWith('#') && !l.includes('echo'));
  assert.equal(lines.length, 1, `${where} runs npm ci once`);
  const w = words(lines[0].slice(lines[0].indexOf('npm ci')));
  return w.slice(2).sort();
}

describe('Dockerfile and docker-compose.yml', () => {
  const pkg = JSON.parse(read('package.json'));
  const dockerfile = read('Dockerfile');
  const compose = read('docker-compose.yml');

  it('install with the npm ci CI runs (only leaving out devDependencies)', () => {
    const ci = npmCiFlags(read('.ci/run'), '.ci/run');
    const docker = npmCiFlags(dockerfile, 'Dockerfile');
    assert.deepEqual(docker.filter((f) => f !== '--omit=dev'), ci);
    // The packed CLI check installs with runtime dependencies only, which is
    // what proves --omit=dev leaves nothing out that the program imports.
    assert.match(read('.ci/run'), /scripts\/pack-check\.sh/);
  });

  it('start with npm start, which is the weir serve the tests spawn', () => {
    assert.match(dockerfile, /^CMD \["npm", "start"\]$/m);
    assert.match(compose, /^\s+command: \["npm", "start"\]$/m);
    assert.equal(pkg.scripts.start, 'node bin/weir.mjs serve');
    const helper = read('test/helpers/weir-process.ts');
    assert.match(helper, /WEIR_BIN = join\(ROOT, 'bin\/weir\.mjs'\)/);
    assert.match(helper, /runWeir\(\['serve'\]/);
  });

  it('copy what the package ships to run (bin/ and src/) and the lockfile npm ci needs', () => {
    for (const dir of (pkg.files as string[]).filter((f) => f === 'bin/' || f === 'src/')) {
      assert.match(dockerfile, new RegExp(`^COPY ${dir.replace('/', '')} \\./${dir.replace('/', '')}$`, 'm'), `Dockerfile copies ${dir}`);
    }
    assert.match(dockerfile, /^COPY package\.json package-lock\.json \.\/$/m);
  });

  it('use a Node that package.json engines accepts', () => {
    const major = Number(/^FROM node:(\d+)/m.exec(dockerfile)?.[1]);
    const min = /^>=(\d+)\.(\d+)\.(\d+)$/.exec(pkg.engines.node);
    assert.ok(min, 'engines.node is a plain minimum');
    assert.ok(major >= Number(min[1]), `node:${major} against engines ${pkg.engines.node}`);
  });

  it('run Weir on the compose file\'s PostgreSQL, on the default ports, listening beyond loopback', () => {
    assert.match(compose, /DATABASE_URL: postgres:\/\/weir:weir@postgres:5432\/weir/);
    assert.match(compose, /"127\.0\.0\.1:8080:8080"/);
    assert.match(compose, /"127\.0\.0\.1:8081:8081"/);
    assert.match(dockerfile, /WEIR_HOST=0\.0\.0\.0/);
    assert.match(dockerfile, /^EXPOSE 8080 8081$/m);
  });
});

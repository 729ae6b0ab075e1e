import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { call, useTestApp } from '../helpers/app.ts';

describe('metrics turned off (WEIR_METRICS=0)', () => {
  const t = useTestApp({ metrics: false }, { reset: false });

  it('answers /metrics with the 404 envelope', async () => {
    const { status, json } = await call(t.app, 'GET', '/metrics');
    assert.equal(status, 404);
    assert.equal(json.error.code, 'not_found');
    assert.match(json.error.message, /WEIR_METRICS=0/);
  });
});

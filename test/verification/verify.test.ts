import { sign as githubSign } from '@octokit/webhooks-methods';
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import Stripe from 'stripe';
import twilio from 'twilio';
import { prepareVerifier, type StoredVerification } from '../../src/verification/settings.ts';
import { twilioUrls, verifyRequest, type Provider, type SignedRequest } from '../../src/verification/verify.ts';

// Issue 25: each provider's scheme, checked against requests signed by the
// provider's own library (Stripe, GitHub, Standard Webhooks, Twilio) or by
// its documented recipe (Shopify, Slack). No database: the verifier alone.

const stripe = new Stripe('sk_test_unused');
const BASE = 'https://hooks.example.com';
const SLUG = 'k3x9q2m7a1b2c3d4';
const now = () => Math.floor(Date.now() / 1000);

function verifier(provider: Provider, secret: string, extra: Partial<StoredVerification> = {}, previous?: { secret: string; expiresAt: Date }) {
  const stored: StoredVerification = { provider, enforce: false, tolerance_seconds: 300, header: null, algorithm: null, encoding: null, prefix: null, ...extra };
  return prepareVerifier(stored, secret, previous?.secret ?? null, previous?.expiresAt ?? null, BASE);
}

function request(headers: Record<string, string>, body: Buffer | string, path = '', query = ''): SignedRequest {
  return { rawHeaders: Object.entries(headers).flat(), body: Buffer.isBuffer(body) ? body : Buffer.from(body), slug: SLUG, path, query };
}

const verified = { status: 'verified', reason: null };
const failed = (reason: string) => ({ status: 'failed', reason });

/** Per provider: headers for a body signed with `secret` at `timestamp` (seconds). */
interface Scheme {
  provider: Provider;
  secret: string;
  otherSecret: string;
  extra?: Partial<StoredVerification>;
  sign(secret: string, body: string, timestamp: number): Promise<Record<string, string>> | Record<string, string>;
  /** The signature header(s) to drop for "missing". */
  signatureHeader: string;
  timestamped: boolean;
  contentType?: string;
}

const STANDARD_SECRET = 'whsec_' + randomBytes(24).toString('base64');
const TWILIO_TOKEN = randomBytes(16).toString('hex');

const SCHEMES: Scheme[] = [
  {
    provider: 'stripe',
    secret: 'whsec_' + randomBytes(16).toString('hex'),
    otherSecret: 'whsec_' + randomBytes(16).toString('hex'),
    sign: (secret, payload, timestamp) => ({ 'Stripe-Signature': stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp }) }),
    signatureHeader: 'Stripe-Signature',
    timestamped: true,
  },
  {
    provider: 'github',
    secret: "It's a Secret to Everybody",
    otherSecret: 'another secret entirely',
    // the library refuses an empty payload (GitHub never sends one): the documented recipe then
    sign: async (secret, payload) => ({
      'X-Hub-Signature-256': payload === '' ? 'sha256=' + createHmac('sha256', secret).update('').digest('hex') : await githubSign(secret, payload),
    }),
    signatureHeader: 'X-Hub-Signature-256',
    timestamped: false,
  },
  {
    // Shopify's recipe: base64 of HMAC-SHA256 of the raw body with the app's client secret
    provider: 'shopify',
    secret: randomBytes(16).toString('hex'),
    otherSecret: randomBytes(16).toString('hex'),
    sign: (secret, payload) => ({ 'X-Shopify-Hmac-Sha256': createHmac('sha256', secret).update(payload).digest('base64') }),
    signatureHeader: 'X-Shopify-Hmac-Sha256',
    timestamped: false,
  },
  {
    // Slack's recipe: v0= hex HMAC-SHA256 of "v0:{timestamp}:{body}"
    provider: 'slack',
    secret: randomBytes(16).toString('hex'),
    otherSecret: randomBytes(16).toString('hex'),
    sign: (secret, payload, timestamp) => ({
      'X-Slack-Request-Timestamp': String(timestamp),
      'X-Slack-Signature': 'v0=' + createHmac('sha256', secret).update(`v0:${timestamp}:${payload}`).digest('hex'),
    }),
    signatureHeader: 'X-Slack-Signature',
    timestamped: true,
    contentType: 'application/x-www-form-urlencoded',
  },
  {
    provider: 'standard_webhooks',
    secret: STANDARD_SECRET,
    otherSecret: 'whsec_' + randomBytes(24).toString('base64'),
    sign: (secret, payload, timestamp) => {
      const id = 'msg_' + randomBytes(6).toString('hex');
      return {
        'webhook-id': id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': new StandardWebhook(secret).sign(id, new Date(timestamp * 1000), payload),
      };
    },
    signatureHeader: 'webhook-signature',
    timestamped: true,
  },
  {
    provider: 'hmac',
    secret: 'generic-hmac-secret',
    otherSecret: 'generic-hmac-other',
    extra: { header: 'x-signature', algorithm: 'sha512', encoding: 'base64', prefix: 'sha512=' },
    sign: (secret, payload) => ({ 'X-Signature': 'sha512=' + createHmac('sha512', secret).update(payload).digest('base64') }),
    signatureHeader: 'X-Signature',
    timestamped: false,
  },
];

for (const s of SCHEMES) {
  describe(s.provider, () => {
    const body = s.contentType ? 'token=abc&team_id=T1&text=hello+world' : '{"id":"evt_1","type":"ping","data":{"n":1}}';
    const headers = (h: Record<string, string>) => ({ 'Content-Type': s.contentType ?? 'application/json', ...h });
    const v = verifier(s.provider, s.secret, s.extra);

    test('a request signed with the secret is verified', async () => {
      assert.deepEqual(verifyRequest(v, request(headers(await s.sign(s.secret, body, now())), body)), verified);
    });
    test('another secret: bad_signature', async () => {
      assert.deepEqual(verifyRequest(v, request(headers(await s.sign(s.otherSecret, body, now())), body)), failed('bad_signature'));
    });
    test('a tampered body: bad_signature', async () => {
      const h = headers(await s.sign(s.secret, body, now()));
      assert.deepEqual(verifyRequest(v, request(h, body.replace('1', '2'))), failed('bad_signature'));
      assert.deepEqual(verifyRequest(v, request(h, body + ' ')), failed('bad_signature'));
    });
    test('no signature header: missing_signature', async () => {
      const h = headers(await s.sign(s.secret, body, now()));
      delete (h as Record<string, string>)[s.signatureHeader];
      assert.deepEqual(verifyRequest(v, request(h, body)), failed('missing_signature'));
    });
    test('a signature header that is not one: malformed_signature', async () => {
      const h = headers(await s.sign(s.secret, body, now()));
      (h as Record<string, string>)[s.signatureHeader] = 'not a signature';
      assert.deepEqual(verifyRequest(v, request(h, body)), failed('malformed_signature'));
    });
    if (s.timestamped) {
      test('a stale timestamp, correctly signed: timestamp_out_of_tolerance; within tolerance_seconds it is fine', async () => {
        const old = now() - 600;
        assert.deepEqual(verifyRequest(v, request(headers(await s.sign(s.secret, body, old)), body)), failed('timestamp_out_of_tolerance'));
        const lenient = verifier(s.provider, s.secret, { ...s.extra, tolerance_seconds: 900 });
        assert.deepEqual(verifyRequest(lenient, request(headers(await s.sign(s.secret, body, old)), body)), verified);
        // the future is as far off as the past
        assert.deepEqual(verifyRequest(v, request(headers(await s.sign(s.secret, body, now() + 600)), body)), failed('timestamp_out_of_tolerance'));
      });
    }
    test('rotation: the previous secret verifies until its expiry, then not', async () => {
      const rotated = verifier(s.provider, s.otherSecret, s.extra, { secret: s.secret, expiresAt: new Date(Date.now() + 60_000) });
      const byOld = request(headers(await s.sign(s.secret, body, now())), body);
      const byNew = request(headers(await s.sign(s.otherSecret, body, now())), body);
      assert.deepEqual(verifyRequest(rotated, byOld), verified);
      assert.deepEqual(verifyRequest(rotated, byNew), verified);
      assert.deepEqual(verifyRequest(rotated, byOld, Date.now() + 61_000), failed('bad_signature'));
      assert.deepEqual(verifyRequest(rotated, byNew, Date.now() + 61_000), verified);
    });
    test('an empty body and a 5 MiB body', async () => {
      for (const b of ['', 'x'.repeat(5 * 1024 * 1024)]) {
        assert.deepEqual(verifyRequest(v, request(headers(await s.sign(s.secret, b, now())), b)), verified);
      }
    });
  });
}

describe('stripe specifics', () => {
  const secret = 'whsec_' + randomBytes(16).toString('hex');
  const v = verifier('stripe', secret);
  test('several v1 signatures: any one matching verifies (Stripe sends two while a secret rolls)', () => {
    const t = now();
    const good = createHmac('sha256', secret).update(`${t}.{}`).digest('hex');
    const other = createHmac('sha256', 'whsec_other').update(`${t}.{}`).digest('hex');
    assert.deepEqual(verifyRequest(v, request({ 'Stripe-Signature': `t=${t},v1=${other},v1=${good},v0=${other}` }, '{}')), verified);
    assert.deepEqual(verifyRequest(v, request({ 'Stripe-Signature': `t=${t},v1=${other}` }, '{}')), failed('bad_signature'));
    assert.deepEqual(verifyRequest(v, request({ 'Stripe-Signature': `t=${t},v0=${good}` }, '{}')), failed('malformed_signature'));
    assert.deepEqual(verifyRequest(v, request({ 'Stripe-Signature': `v1=${good}` }, '{}')), failed('malformed_signature'));
  });
  test('a hex signature is exactly the digest in hex: upper case verifies; a stray character, one too many or too few does not', () => {
    const t = now();
    const good = createHmac('sha256', secret).update(`${t}.{}`).digest('hex');
    const sig = (v1: string) => verifyRequest(v, request({ 'Stripe-Signature': `t=${t},v1=${v1}` }, '{}'));
    assert.deepEqual(sig(good.toUpperCase()), verified);
    for (const bad of [good + 'z', good + '0', good + '00', good.slice(0, -1), good.slice(0, -2), good.slice(0, -1) + 'g', 'g' + good.slice(1), good.slice(0, 31) + 'x' + good.slice(32)]) {
      assert.deepEqual(sig(bad), failed('malformed_signature'), bad);
    }
  });
  test('signatures are read where they lie in the header: spaces around items and values are ignored, a control character is not hex', () => {
    const t = now();
    const good = createHmac('sha256', secret).update(`${t}.{}`).digest('hex');
    const header = (value: string) => verifyRequest(v, request({ 'Stripe-Signature': value }, '{}'));
    assert.deepEqual(header(` t=${t} , v1= ${good}\t, v0=x`), verified);
    assert.deepEqual(header(`t=${t},v1=\u00a0${good}\u00a0`), verified);
    // 0x10-0x19 are '0'-'9' with the case bit set: not hex digits for all that
    assert.deepEqual(header(`t=${t},v1=${good.slice(0, 10)}\u0010${good.slice(11)}`), failed('malformed_signature'));
    const otherLetter = good[10] === 'a' ? 'B' : 'A';
    assert.deepEqual(header(`t=${t},v1=${good.slice(0, 10)}${otherLetter}${good.slice(11)}`), failed('bad_signature'));
  });
  test('binary bodies: the bytes as received are what is signed', () => {
    const body = randomBytes(4096);
    const t = now();
    const sig = createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex');
    assert.deepEqual(verifyRequest(v, request({ 'Stripe-Signature': `t=${t},v1=${sig}` }, body)), verified);
    const flipped = Buffer.from(body);
    flipped[100] ^= 1;
    assert.deepEqual(verifyRequest(v, request({ 'Stripe-Signature': `t=${t},v1=${sig}` }, flipped)), failed('bad_signature'));
  });
});

describe('standard webhooks specifics', () => {
  test('space-separated v1 signatures (library), and binary bodies (the recipe: the library signs strings)', () => {
    const body = '{"type":"invoice.paid"}';
    const id = 'msg_spaces';
    const at = new Date();
    const good = new StandardWebhook(STANDARD_SECRET).sign(id, at, body);
    const other = new StandardWebhook('whsec_' + randomBytes(24).toString('base64')).sign(id, at, body);
    const v = verifier('standard_webhooks', STANDARD_SECRET);
    const binary = randomBytes(1000);
    const ts = String(Math.floor(at.getTime() / 1000));
    const key = Buffer.from(STANDARD_SECRET.slice(6), 'base64');
    const binarySig = 'v1,' + createHmac('sha256', key).update(`${id}.${ts}.`).update(binary).digest('base64');
    assert.deepEqual(verifyRequest(v, request({ 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': binarySig }, binary)), verified);
    const headers = (sig: string) => ({ 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': sig });
    assert.deepEqual(verifyRequest(v, request(headers(`${other} ${good}`), body)), verified);
    assert.deepEqual(verifyRequest(v, request(headers(other), body)), failed('bad_signature'));
    assert.deepEqual(verifyRequest(v, request({ ...headers(good), 'webhook-id': 'msg_other' }, body)), failed('bad_signature'));
    const { 'webhook-id': _id, ...noId } = headers(good);
    assert.deepEqual(verifyRequest(v, request(noId, body)), failed('missing_signature'));
  });
});

describe('twilio', () => {
  const v = verifier('twilio', TWILIO_TOKEN);
  const url = `${BASE}/h/${SLUG}/sms?From=%2B1555`;
  const params = { To: '+15551234567', From: '+15557654321', Body: 'Hello & goodbye', MessageSid: 'SM123' };
  const form = new URLSearchParams(params).toString();
  const signed = (token: string, u = url) => ({ 'Content-Type': 'application/x-www-form-urlencoded', 'X-Twilio-Signature': twilio.getExpectedTwilioSignature(token, u, params) });

  test('form-encoded: the full public URL (base, /h/{slug}, path, query) plus the sorted parameters', () => {
    assert.deepEqual(twilioUrls(BASE, { slug: SLUG, path: '/sms', query: 'From=%2B1555' }), [url, `https://hooks.example.com:443/h/${SLUG}/sms?From=%2B1555`]);
    assert.deepEqual(verifyRequest(v, request(signed(TWILIO_TOKEN), form, '/sms', 'From=%2B1555')), verified);
    // Twilio's own validator accepts the URL with the default port too
    assert.deepEqual(verifyRequest(v, request(signed(TWILIO_TOKEN, `https://hooks.example.com:443/h/${SLUG}/sms?From=%2B1555`), form, '/sms', 'From=%2B1555')), verified);
  });
  test('wrong token, tampered parameters, another URL, no header, malformed header', () => {
    assert.deepEqual(verifyRequest(v, request(signed(randomBytes(16).toString('hex')), form, '/sms', 'From=%2B1555')), failed('bad_signature'));
    assert.deepEqual(verifyRequest(v, request(signed(TWILIO_TOKEN), form.replace('SM123', 'SM124'), '/sms', 'From=%2B1555')), failed('bad_signature'));
    assert.deepEqual(verifyRequest(v, request(signed(TWILIO_TOKEN), form, '/other', 'From=%2B1555')), failed('bad_signature'));
    const { 'X-Twilio-Signature': _sig, ...unsigned } = signed(TWILIO_TOKEN);
    assert.deepEqual(verifyRequest(v, request(unsigned, form, '/sms', 'From=%2B1555')), failed('missing_signature'));
    assert.deepEqual(verifyRequest(v, request({ ...unsigned, 'X-Twilio-Signature': '***' }, form, '/sms', 'From=%2B1555')), failed('malformed_signature'));
  });
  test('a JSON body: the URL with bodySHA256 is signed, and the body must hash to it', () => {
    const body = '{"event":"call.completed"}';
    const hash = twilio.getExpectedBodyHash(body);
    const u = `${BASE}/h/${SLUG}?bodySHA256=${hash}`;
    const h = { 'Content-Type': 'application/json', 'X-Twilio-Signature': twilio.getExpectedTwilioSignature(TWILIO_TOKEN, u, {}) };
    assert.ok(twilio.validateRequestWithBody(TWILIO_TOKEN, h['X-Twilio-Signature'], u, body));
    assert.deepEqual(verifyRequest(v, request(h, body, '', `bodySHA256=${hash}`)), verified);
    assert.deepEqual(verifyRequest(v, request(h, body + ' ', '', `bodySHA256=${hash}`)), failed('bad_signature'));
  });
});

describe('the HMAC itself (pads prepared once per secret, not createHmac per capture)', () => {
  // Node's createHmac is the reference: every digest, keys shorter than,
  // equal to and longer than the digest's block (64 or 128 bytes; a longer
  // key is hashed first), non-ASCII secrets and text, and bodies on both
  // sides of the size past which the message streams instead of being copied.
  const secrets = ['8-chars!', 'k'.repeat(64), 'k'.repeat(65), 'é'.repeat(64), 's'.repeat(129), randomBytes(512).toString('hex')];
  const bodies = [Buffer.alloc(0), Buffer.from('{"é":"ü"}'), randomBytes(1024), randomBytes(64 * 1024 - 100), randomBytes(70_000)];
  for (const algorithm of ['sha1', 'sha256', 'sha512'] as const) {
    test(`${algorithm}: the same digest as createHmac for every key length and body size`, () => {
      for (const secret of secrets) {
        const v = verifier('hmac', secret, { header: 'x-signature', algorithm, encoding: 'hex', prefix: null });
        for (const body of bodies) {
          const sig = createHmac(algorithm, secret).update(body).digest('hex');
          assert.deepEqual(verifyRequest(v, request({ 'X-Signature': sig }, body)), verified, `${algorithm}, a ${secret.length}-character secret, ${body.length} bytes`);
          const other = createHmac(algorithm, secret + 'x').update(body).digest('hex');
          assert.deepEqual(verifyRequest(v, request({ 'X-Signature': other }, body)), failed('bad_signature'));
        }
      }
    });
  }
  test('text parts are UTF-8, as Hmac.update reads them (Slack: the timestamp and body around ":")', () => {
    const secret = 'slack-sécret';
    const t = String(now());
    for (const body of [Buffer.from('text=héllo'), randomBytes(70_000)]) {
      const sig = 'v0=' + createHmac('sha256', secret).update(`v0:${t}:`).update(body).digest('hex');
      assert.deepEqual(verifyRequest(verifier('slack', secret), request({ 'X-Slack-Signature': sig, 'X-Slack-Request-Timestamp': t }, body)), verified);
    }
  });
});

describe('the buffers a check reuses (the HMAC messages) carry nothing from one check to the next', () => {
  test('bodies of every size in turn (empty, 1 KiB, 20 KiB past the first buffer, 70 KiB streamed, then small again), each provider, good and bad', async () => {
    const sizes = [0, 1024, 20 * 1024, 70 * 1024, 10, 1024];
    for (const s of SCHEMES) {
      const v = verifier(s.provider, s.secret, s.extra);
      for (const size of sizes) {
        const body = s.contentType === 'application/x-www-form-urlencoded' ? `Body=${'x'.repeat(size)}` : randomBytes(size).toString('base64').slice(0, size);
        const headers = { ...(await s.sign(s.secret, body, now())), 'Content-Type': s.contentType ?? 'application/json' };
        assert.deepEqual(verifyRequest(v, request(headers, body)), verified, `${s.provider}, ${size} bytes`);
        const wrong = { ...(await s.sign(s.otherSecret, body, now())), 'Content-Type': s.contentType ?? 'application/json' };
        assert.deepEqual(verifyRequest(v, request(wrong, body)), failed('bad_signature'), `${s.provider}, ${size} bytes, other secret`);
      }
    }
  });
  test('base64 signatures: the canonical text of the digest verifies, and one character changed anywhere does not', () => {
    const secret = 'shpss_' + randomBytes(16).toString('hex');
    const v = verifier('shopify', secret);
    const good = createHmac('sha256', secret).update('{}').digest('base64');
    const sig = (value: string) => verifyRequest(v, request({ 'X-Shopify-Hmac-Sha256': value }, '{}'));
    assert.deepEqual(sig(good), verified);
    for (let i = 0; i < good.length - 1; i++) {
      const c = good[i] === 'A' ? 'B' : 'A';
      assert.notDeepEqual(sig(good.slice(0, i) + c + good.slice(i + 1)), verified, `position ${i}`);
    }
  });
});

import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import type { Role } from '../../src/auth/permissions.ts';
import { newId } from '../../src/db/ids.ts';
import { insertSavedDestination } from '../../src/destinations/saved-destinations.ts';
import { addMemberWithKey, call, seedOrg, type Seeded, useTestApp } from '../helpers/app.ts';
import { insertEndpoint } from '../helpers/fixtures.ts';
import { destinationState } from './helpers.ts';

describe('saved destinations: GET, PATCH, DELETE /v1/destinations', () => {
  const t = useTestApp();
  let s: Seeded;
  beforeEach(async () => {
    s = await seedOrg(t.db, { plan: 'pro', role: 'developer' });
  });

  const create = async (body: Record<string, unknown>, key = s.key) => {
    const r = await call(t.app, 'POST', '/v1/destinations', { key, body: { url: 'https://x.example/in', ...body } });
    assert.equal(r.status, 201, JSON.stringify(r.json));
    return r.json.data;
  };
  const get = (path: string, key = s.key) => call(t.app, 'GET', path, { key });

  describe('happy', () => {
    it('lists newest first with endpoint_count, saved https destinations only', async () => {
      const ep1 = await insertEndpoint(t.db, s.org.id);
      const ep2 = await insertEndpoint(t.db, s.org.id);
      const a = await create({ name: 'a' });
      const b = await create({ name: 'b', endpoint_id: ep1.id });
      await call(t.app, 'POST', `/v1/endpoints/${ep2.id}/destinations`, { key: s.key, body: { destination_id: b.id } });
      const r = await get('/v1/destinations');
      assert.equal(r.status, 200);
      assert.deepEqual(
        r.json.data.data.map((d: any) => [d.id, d.name, d.endpoint_count]),
        [
          [b.id, 'b', 2],
          [a.id, 'a', 0],
        ],
      );
      assert.deepEqual(r.json.data.meta, { count: 2, has_more: false, next_cursor: null });
      const item = r.json.data.data[0];
      for (const f of ['id', 'name', 'url', 'visibility', 'is_reusable', 'created_at', 'endpoint_count']) assert.ok(f in item, f);
    });

    it('walks pages with the before cursor', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 7; i++) ids.push((await insertSavedDestination(t.db, { organizationId: s.org.id, createdBy: s.memberId, name: `d${i}`, url: 'https://x.example', visibility: 'org', isReusable: true })).id);
      const newestFirst = [...ids].reverse();
      const seen: string[] = [];
      let cursor: string | null = null;
      const metas: unknown[] = [];
      do {
        const r = await get(`/v1/destinations?limit=3${cursor ? `&before=${cursor}` : ''}`);
        assert.equal(r.status, 200);
        seen.push(...r.json.data.data.map((d: any) => d.id));
        metas.push(r.json.data.meta);
        cursor = r.json.data.meta.next_cursor;
      } while (cursor);
      assert.deepEqual(seen, newestFirst);
      assert.deepEqual(metas, [
        { count: 3, has_more: true, next_cursor: newestFirst[2] },
        { count: 3, has_more: true, next_cursor: newestFirst[5] },
        { count: 1, has_more: false, next_cursor: null },
      ]);
    });

    it('pages 25 by default', async () => {
      for (let i = 0; i < 26; i++) await insertSavedDestination(t.db, { organizationId: s.org.id, createdBy: s.memberId, name: `d${i}`, url: 'https://x.example', visibility: 'org', isReusable: true });
      const r = await get('/v1/destinations');
      assert.equal(r.json.data.data.length, 25);
      assert.equal(r.json.data.meta.has_more, true);
      const all = await get('/v1/destinations?limit=100');
      assert.equal(all.json.data.data.length, 26);
    });

    it('gets one with its https attachments', async () => {
      const ep = await insertEndpoint(t.db, s.org.id, { name: 'Orders' });
      const d = await create({ name: 'Staging', endpoint_id: ep.id });
      const r = await get(`/v1/destinations/${d.id}`);
      assert.equal(r.status, 200);
      assert.equal(r.json.data.id, d.id);
      assert.equal(r.json.data.name, 'Staging');
      assert.deepEqual(r.json.data.endpoints, [{ endpoint_id: ep.id, endpoint_name: 'Orders', forward_destination_id: d.forward_destination_id }]);
    });

    it('PATCH edits name, visibility and is_reusable', async () => {
      const d = await create({ name: 'old' });
      const r = await call(t.app, 'PATCH', `/v1/destinations/${d.id}`, { key: s.key, body: { name: 'new', visibility: 'restricted', is_reusable: false } });
      assert.equal(r.status, 200);
      assert.equal(r.json.data.name, 'new');
      assert.equal(r.json.data.visibility, 'restricted');
      assert.equal(r.json.data.is_reusable, false);
      assert.equal(r.json.data.url, 'https://x.example/in');
      assert.equal((await get(`/v1/destinations/${d.id}`)).json.data.name, 'new');
    });

    it('PATCH of the url carries it to every attachment', async () => {
      const ep = await insertEndpoint(t.db, s.org.id);
      const d = await create({ name: 'x', endpoint_id: ep.id });
      const r = await call(t.app, 'PATCH', `/v1/destinations/${d.id}`, { key: s.key, body: { url: 'https://moved.example/in' } });
      assert.equal(r.status, 200);
      assert.equal(r.json.data.url, 'https://moved.example/in');
      const list = await get(`/v1/endpoints/${ep.id}/destinations`);
      assert.equal(list.json.data.data[0].url, 'https://moved.example/in');
    });

    it('DELETE answers 204 and leaves its attachments forwarding', async () => {
      const ep = await insertEndpoint(t.db, s.org.id);
      const d = await create({ name: 'x', endpoint_id: ep.id });
      const r = await call(t.app, 'DELETE', `/v1/destinations/${d.id}`, { key: s.key });
      assert.equal(r.status, 204);
      assert.equal(r.res.body, '');
      assert.equal((await get(`/v1/destinations/${d.id}`)).status, 404);
      const list = await get(`/v1/endpoints/${ep.id}/destinations`);
      assert.equal(list.json.data.data.length, 1);
      assert.equal(list.json.data.data[0].id, d.forward_destination_id);
      assert.equal(list.json.data.data[0].saved_destination_id, null);
      assert.equal(list.json.data.data[0].url, 'https://x.example/in');
      assert.equal((await call(t.app, 'DELETE', `/v1/destinations/${d.id}`, { key: s.key })).status, 404);
    });
  });

  describe('errors', () => {
    it('unknown and malformed ids are 404 not_found', async () => {
      for (const id of [newId(), 'nope', '123']) {
        for (const [method, body] of [
          ['GET', undefined],
          ['PATCH', { name: 'x' }],
          ['DELETE', undefined],
        ] as const) {
          const r = await call(t.app, method, `/v1/destinations/${id}`, { key: s.key, body });
          assert.equal(r.status, 404, `${method} ${id}`);
          assert.equal(r.json.error.code, 'not_found');
        }
      }
    });

    it('refuses bad paging parameters with 400 bad_request', async () => {
      for (const q of ['limit=0', 'limit=101', 'limit=abc', 'before=nope', 'sort=asc']) {
        const r = await get(`/v1/destinations?${q}`);
        assert.equal(r.status, 400, q);
        assert.equal(r.json.error.code, 'bad_request');
      }
    });

    it('a refused PATCH changes nothing', async () => {
      const ep = await insertEndpoint(t.db, s.org.id);
      const d = await create({ name: 'x', endpoint_id: ep.id });
      const before = await destinationState(t.db);
      for (const body of [
        {},
        { url: 'http://plain.example' },
        { name: 'ok', url: 'https://' },
        { name: '' },
        { visibility: 'public' },
        { is_reusable: 1 },
        { destination_type: 'agent' },
        { endpoint_id: ep.id },
      ]) {
        const r = await call(t.app, 'PATCH', `/v1/destinations/${d.id}`, { key: s.key, body });
        assert.equal(r.status, 400, JSON.stringify(body));
        assert.equal(r.json.error.code, 'bad_request');
      }
      assert.deepEqual(await destinationState(t.db), before);
    });
  });

  describe('security', () => {
    it("another organization's destination is 404 for GET, PATCH and DELETE, and is not listed", async () => {
      const other = await seedOrg(t.db);
      const foreign = await create({ name: 'theirs' }, other.key);
      for (const [method, body] of [
        ['GET', undefined],
        ['PATCH', { name: 'mine now' }],
        ['DELETE', undefined],
      ] as const) {
        const r = await call(t.app, method, `/v1/destinations/${foreign.id}`, { key: s.key, body });
        assert.equal(r.status, 404, method);
      }
      assert.deepEqual((await get('/v1/destinations')).json.data.data, []);
      assert.equal((await get(`/v1/destinations/${foreign.id}`, other.key)).json.data.name, 'theirs');
    });

    it('destinations:read lists and gets; writing needs destinations:write', async () => {
      const d = await create({ name: 'x' });
      const reader = await addMemberWithKey(t.db, s.org.id, 'developer', ['destinations:read']);
      assert.equal((await get('/v1/destinations', reader.key)).status, 200);
      assert.equal((await get(`/v1/destinations/${d.id}`, reader.key)).status, 200);
      assert.equal((await call(t.app, 'PATCH', `/v1/destinations/${d.id}`, { key: reader.key, body: { name: 'y' } })).status, 403);
      assert.equal((await call(t.app, 'DELETE', `/v1/destinations/${d.id}`, { key: reader.key })).status, 403);
      const writerOnly = await addMemberWithKey(t.db, s.org.id, 'developer', ['destinations:write']);
      const r = await get('/v1/destinations', writerOnly.key);
      assert.equal(r.status, 403);
      assert.equal(r.json.error.code, 'forbidden');
      assert.equal((await get(`/v1/destinations/${d.id}`, writerOnly.key)).status, 403);
    });

    it('a viewer reads but cannot edit or delete', async () => {
      const d = await create({ name: 'x' });
      const v = await addMemberWithKey(t.db, s.org.id, 'viewer');
      assert.equal((await get('/v1/destinations', v.key)).json.data.data.length, 1);
      assert.equal((await call(t.app, 'PATCH', `/v1/destinations/${d.id}`, { key: v.key, body: { name: 'y' } })).status, 403);
      assert.equal((await call(t.app, 'DELETE', `/v1/destinations/${d.id}`, { key: v.key })).status, 403);
      assert.equal((await get(`/v1/destinations/${d.id}`)).json.data.name, 'x');
    });

    describe('visibility', () => {
      const who: Role[] = ['super_admin', 'admin', 'developer', 'viewer'];
      const expected: Record<string, Record<Role | 'creator', boolean>> = {
        org: { creator: true, super_admin: true, admin: true, developer: true, viewer: true },
        private: { creator: true, super_admin: true, admin: false, developer: false, viewer: false },
        restricted: { creator: true, super_admin: true, admin: true, developer: false, viewer: false },
      };
      for (const visibility of ['org', 'private', 'restricted'] as const) {
        it(`${visibility}: seen by ${Object.entries(expected[visibility]).filter(([, v]) => v).map(([k]) => k).join(', ')}; 404 to the others`, async () => {
          const d = await create({ name: visibility, visibility });
          const keys: [Role | 'creator', string][] = [['creator', s.key]];
          for (const role of who) keys.push([role, (await addMemberWithKey(t.db, s.org.id, role)).key]);
          for (const [role, key] of keys) {
            const sees = expected[visibility][role];
            const one = await get(`/v1/destinations/${d.id}`, key);
            assert.equal(one.status, sees ? 200 : 404, `${role} GET`);
            const list = await get('/v1/destinations', key);
            assert.equal(list.json.data.data.some((x: any) => x.id === d.id), sees, `${role} list`);
          }
        });
      }

      it('a destination invisible to the member cannot be edited, deleted or attached by them', async () => {
        const d = await create({ name: 'mine', visibility: 'private' });
        const ep = await insertEndpoint(t.db, s.org.id);
        const colleague = await addMemberWithKey(t.db, s.org.id, 'admin');
        const before = await destinationState(t.db);
        assert.equal((await call(t.app, 'PATCH', `/v1/destinations/${d.id}`, { key: colleague.key, body: { name: 'x' } })).status, 404);
        assert.equal((await call(t.app, 'DELETE', `/v1/destinations/${d.id}`, { key: colleague.key })).status, 404);
        const attach = await call(t.app, 'POST', `/v1/endpoints/${ep.id}/destinations`, { key: colleague.key, body: { destination_id: d.id } });
        assert.equal(attach.status, 404);
        assert.deepEqual(await destinationState(t.db), before);
      });

      it('the creator can widen visibility, after which colleagues see it', async () => {
        const d = await create({ name: 'mine', visibility: 'private' });
        const colleague = await addMemberWithKey(t.db, s.org.id, 'developer');
        assert.equal((await get(`/v1/destinations/${d.id}`, colleague.key)).status, 404);
        await call(t.app, 'PATCH', `/v1/destinations/${d.id}`, { key: s.key, body: { visibility: 'org' } });
        assert.equal((await get(`/v1/destinations/${d.id}`, colleague.key)).status, 200);
      });
    });
  });
});

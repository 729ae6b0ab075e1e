// Who is signed in: GET /v1/me, shared with every page through context so a
// page can hide what the key may not do (it is the API that enforces it).
import { createContext, useContext } from './html.js';

/** @type {import('preact').Context<any>} */
export const MeContext = createContext(null);

/** { organization, member, api_key, permissions } of the signed-in key. */
export function useMe() {
  return useContext(MeContext);
}

/** Whether the key's role allows `permission` and its scopes cover `scope` (when given). */
export function can(me, permission, scope) {
  if (!me) return false;
  if (permission && !me.permissions.includes(permission)) return false;
  if (scope && me.api_key.access_mode === 'custom' && !me.api_key.scopes.includes(scope)) return false;
  return true;
}

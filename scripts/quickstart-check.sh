#!/usr/bin/env bash
# Follows the README's quick start as a new user would, from a fresh clone:
#   npm install, npm start (first start prints an API key), curl /v1/me,
#   npx weir login, npx weir listen 3000 /webhooks
# and checks that `weir listen` prints its URL and the one-line warning that
# the URL (on loopback here) is not reachable by providers. Only the ports
# differ from the README (0: free ports, on a shared machine). .ci/run calls
# it; it needs the commit to check to be committed (it clones HEAD).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/weir-quickstart-XXXXXX")"
serve_pid=""
listen_pid=""
cleanup() {
  # Both were started with setsid: each is the leader of its own group.
  [ -n "$listen_pid" ] && kill -- "-$listen_pid" 2>/dev/null || true
  [ -n "$serve_pid" ] && kill -- "-$serve_pid" 2>/dev/null || true
  sleep 1
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "quickstart-check: $*" >&2; exit 1; }
wait_for() { # file, pattern, what
  for _ in $(seq 1 240); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.5; done
  echo "--- $1:" >&2; cat "$1" >&2 || true
  fail "timed out waiting for $3"
}

# The README must still say what this script does.
for cmd in 'npm install' 'npm start' 'npx weir login --server' 'npx weir listen 3000 /webhooks'; do
  grep -qF "$cmd" "$repo/README.md" || fail "README.md no longer shows \`$cmd\`: update this script with it"
done

echo "== git clone"
git clone --quiet "$repo" "$work/weir"
cd "$work/weir"
export HOME="$work/home" XDG_CONFIG_HOME="$work/home/.config"
mkdir -p "$XDG_CONFIG_HOME"
unset DATABASE_URL WEIR_SERVER WEIR_API_KEY

echo "== npm install"
npm install --no-audit --no-fund --prefer-offline >"$work/install.log" 2>&1 || { cat "$work/install.log" >&2; fail "npm install failed"; }

echo "== npm start"
WEIR_API_PORT=0 WEIR_INGEST_PORT=0 setsid npm start >"$work/serve.out" 2>"$work/serve.err" &
serve_pid=$!
wait_for "$work/serve.out" 'API key, shown only this once' 'the first-start API key'
wait_for "$work/serve.out" 'wr_live_' 'the key itself'
api="$(sed -n 's|^ *API: *\(http://[^ ]*\)/v1 .*|\1|p' "$work/serve.out" | head -n 1)"
key="$(grep -o 'wr_live_[A-Za-z0-9_]*' "$work/serve.out" | head -n 1)"
[ -n "$api" ] && [ -n "$key" ] || fail "could not read the API address and key from npm start's output"
grep -q 'plan self_hosted' "$work/serve.out" || fail "the first organization is not on self_hosted"

echo "== curl /v1/me"
code="$(curl -s -o "$work/me.json" -w '%{http_code}' -H "Authorization: Bearer $key" "$api/v1/me")"
[ "$code" = 200 ] || fail "GET /v1/me answered $code"

echo "== npx weir login"
npx weir login --server "$api" --key "$key" >/dev/null

echo "== npx weir listen 3000 /webhooks"
setsid npx weir listen 3000 /webhooks >"$work/listen.out" 2>"$work/listen.err" &
listen_pid=$!
wait_for "$work/listen.out" 'Webhook URL' 'the webhook URL'
wait_for "$work/listen.err" '^weir: warning: providers cannot reach this URL' 'the unreachable-URL warning'
[ "$(grep -c '^weir: warning:' "$work/listen.err")" = 1 ] || fail "expected one warning line"
grep -m1 'Webhook URL' "$work/listen.out"
grep -m1 '^weir: warning:' "$work/listen.err"
echo "quickstart-check: ok"

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { expectText, horizontalOverflow, launchChromium, recordPageErrors, seriousA11yViolations, signIn } from '../helpers/browser.ts';
import { freshStore, http, startWeirProcess, type Store, type WeirProcess } from '../helpers/weir-process.ts';
import { startAgent, type AgentProcess } from '../agents/helpers.ts';

/**
 * The agents page in a real browser against a real `weir serve` (its first
 * start's key, on the free plan since WEIR_PLANS is set: one production
 * agent), with the real agent
 * CLI connecting to it.
 */
describe('dashboard: agents', () => {
  let store: Store;
  let weir: WeirProcess;
  let browser: Browser;
  const agents: AgentProcess[] = [];
  before(async () => {
    store = await freshStore();
    // WEIR_PLANS set (even to {}): the first organization starts on free
    weir = await startWeirProcess({ ...store.env, WEIR_PLANS: '{}' });
    browser = await launchChromium();
  });
  after(async () => {
    for (const a of agents) a.child.kill('SIGKILL');
    await Promise.all(agents.map((a) => a.exited));
    await browser?.close();
    await weir?.stop('SIGKILL');
    await store?.drop();
  });

  async function open(opts: { width?: number } = {}): Promise<{ page: Page; errors: string[] }> {
    const page = await browser.newPage({ viewport: { width: opts.width ?? 1280, height: 800 } });
    const errors: string[] = [];
    recordPageErrors(page, errors);
    await signIn(page, weir.base, weir.bootstrapKey!, '/agents');
    await page.getByRole('heading', { level: 1, name: 'Agents' }).waitFor();
    return { page, errors };
  }
  const api = (method: string, path: string, body?: unknown) => http(weir.base, method, '/v1' + path, { token: weir.bootstrapKey!, body });
  const item = (page: Page, name: string) => page.getByRole('listitem').filter({ has: page.getByRole('heading', { level: 3, name, exact: true }) });

  it('enrolls an agent, shows its connect command once, and shows it connected when the real agent runs', async () => {
    const { page, errors } = await open();
    await page.getByText('No agents yet.').waitFor();
    assert.deepEqual(await seriousA11yViolations(page), []);

    await page.getByLabel('Name').fill('laptop <b>bold</b>');
    await page.getByRole('button', { name: 'Enroll' }).click();
    const secret = page.locator('#agent-enrolled');
    await secret.waitFor();
    const command = (await secret.locator('pre').innerText()).trim();
    const m = /^npx weir agent --server (\S+) --token (wr_agent_\S+)$/.exec(command);
    assert.ok(m, command);
    assert.equal(m[1], weir.base);
    await expectText(secret, /shown only this once/);
    await secret.getByRole('button', { name: 'Copy' }).waitFor();
    const li = item(page, 'laptop <b>bold</b>');
    await li.waitFor();
    await expectText(li, /laptop <b>bold<\/b>\s*development\s*never connected/);
    assert.equal(await page.locator('main b').count(), 0, 'a name is text, never markup');
    const listed = (await api('GET', '/agents')).json.data.data;
    assert.deepEqual(listed.map((a: { name: string; environment: string }) => [a.name, a.environment]), [['laptop <b>bold</b>', 'development']]);
    assert.deepEqual(await seriousA11yViolations(page), []);

    const agent = startAgent(m[1], m[2]);
    agents.push(agent);
    await agent.waitForEvent((e) => e.event === 'connected', 'the agent to connect');
    // the page refreshes by itself
    await page.locator('li.agent[data-status="connected"]').waitFor({ timeout: 20_000 });
    await expectText(li, /connected from \S+ \(v0\.1\.0\)/);
    await expectText(li, /Weir node/);

    // a reload no longer shows the token
    await page.reload();
    await item(page, 'laptop <b>bold</b>').waitFor();
    assert.equal(await page.locator('#agent-enrolled').count(), 0);
    assert.equal((await page.locator('main').innerText()).includes(m[2]), false);

    // re-issuing the token shows the new command once, and the running agent is disconnected
    await li.getByRole('button', { name: 'Re-issue token' }).click();
    await li.getByRole('button', { name: 'Re-issue the token' }).click();
    const fresh = (await li.locator('.secret pre').innerText()).trim();
    const m2 = /--token (wr_agent_\S+)$/.exec(fresh);
    assert.ok(m2 && m2[1] !== m[2], fresh);
    assert.equal(await agent.exited, 1, 'the old token stops the running agent');
    await page.locator('li.agent[data-status="disconnected"]').waitFor({ timeout: 20_000 });
    await expectText(li, /disconnected, last seen/);
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('renames, changes the environment, shows the plan\'s refusal where it was asked, and revokes', async () => {
    const { page, errors } = await open();
    // production counts toward the free plan's max_agents (1)
    await page.getByLabel('Name').fill('prod-box');
    await page.getByLabel('Environment').selectOption('production');
    await page.getByRole('button', { name: 'Enroll' }).click();
    await item(page, 'prod-box').waitFor();
    await page.getByText('Production agents in use: 1 of 1 on this plan.').waitFor();
    await page.getByLabel('Name').fill('second-prod');
    await page.getByLabel('Environment').selectOption('production');
    await page.getByRole('button', { name: 'Enroll' }).click();
    await page.locator('#agent-error', { hasText: /plan/i }).waitFor();
    assert.equal((await api('GET', '/agents')).json.data.data.some((a: { name: string }) => a.name === 'second-prod'), false);

    // an all-spaces name passes the browser's check; the API's 400 shows at the form
    await page.getByLabel('Name').fill('   ');
    await page.getByRole('button', { name: 'Enroll' }).click();
    await page.locator('#agent-error', { hasText: /name/ }).waitFor();

    const li = item(page, 'laptop <b>bold</b>');
    await li.getByRole('button', { name: /^Edit/ }).click();
    await li.getByLabel('Name').fill('laptop-2');
    await li.getByLabel('Environment').selectOption('production');
    await li.getByRole('button', { name: 'Save' }).click();
    await li.getByRole('alert').filter({ hasText: /plan/i }).waitFor();
    let rows = (await api('GET', '/agents')).json.data.data as Array<{ id: string; name: string; environment: string }>;
    assert.ok(rows.some((a) => a.name === 'laptop <b>bold</b>' && a.environment === 'development'), 'a refused change changes nothing');
    await li.getByLabel('Environment').selectOption('development');
    await li.getByRole('button', { name: 'Save' }).click();
    const renamed = item(page, 'laptop-2');
    await renamed.waitFor();
    rows = (await api('GET', '/agents')).json.data.data;
    assert.ok(rows.some((a) => a.name === 'laptop-2' && a.environment === 'development'));
    assert.deepEqual(await seriousA11yViolations(page), []);

    const prod = item(page, 'prod-box');
    await prod.getByRole('button', { name: 'Revoke' }).click();
    await prod.getByRole('button', { name: 'Revoke the agent' }).click();
    await prod.waitFor({ state: 'detached' });
    const all = (await api('GET', '/agents?include_revoked=true')).json.data.data as Array<{ name: string; revoked_at: string | null }>;
    assert.ok(all.find((a) => a.name === 'prod-box')?.revoked_at, 'revoked in the API');
    await page.getByText('Production agents in use: 0 of 1 on this plan.').waitFor();
    await page.getByLabel('Show revoked agents').check();
    await item(page, 'prod-box').getByText(/^revoked /).waitFor();
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('enrolls by keyboard alone, and fits a 360 px screen', async () => {
    const { page, errors } = await open({ width: 360 });
    assert.equal(await horizontalOverflow(page), 0);
    await page.getByLabel('Name').focus();
    await page.keyboard.type('keyboard-box');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate('document.activeElement?.textContent'), 'Enroll');
    await page.keyboard.press('Enter');
    await page.locator('#agent-enrolled').waitFor();
    await page.keyboard.press('Tab');
    await item(page, 'keyboard-box').waitFor();
    assert.ok((await api('GET', '/agents')).json.data.data.some((a: { name: string }) => a.name === 'keyboard-box'));
    assert.equal(await horizontalOverflow(page), 0);
    assert.deepEqual(await seriousA11yViolations(page), []);
    assert.deepEqual(errors, []);
    await page.close();
  });
});

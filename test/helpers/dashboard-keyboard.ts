import type { Page } from 'playwright-core';

/** What has the focus: its tag, accessible-ish name (aria-label, label text or text), and id. */
export async function focused(page: Page): Promise<{ tag: string; name: string; id: string }> {
  return page.evaluate<{ tag: string; name: string; id: string }>(`(() => {
    const el = document.activeElement;
    if (!el) return { tag: '', name: '', id: '' };
    const label = el.id ? document.querySelector('label[for="' + el.id + '"]') : null;
    const name = el.getAttribute('aria-label') || (label ? label.textContent : '') || el.textContent || '';
    return { tag: el.tagName.toLowerCase(), name: name.trim().replace(/\\s+/g, ' '), id: el.id };
  })()`);
}

/**
 * Presses Tab (Shift+Tab when `back`) until the focused element's name
 * matches `name`, as a keyboard user would; throws after `max` presses.
 */
export async function tabTo(page: Page, name: string | RegExp, { back = false, max = 80 } = {}): Promise<void> {
  const seen: string[] = [];
  for (let i = 0; i < max; i++) {
    await page.keyboard.press(back ? 'Shift+Tab' : 'Tab');
    const f = await focused(page);
    seen.push(`${f.tag}:${f.name.slice(0, 40)}`);
    if (typeof name === 'string' ? f.name === name : name.test(f.name)) return;
  }
  throw new Error(`Tab never reached ${String(name)}; reached: ${seen.join(' | ')}`);
}

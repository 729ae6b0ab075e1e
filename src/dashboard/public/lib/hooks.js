// Data hooks shared by every page: loading, errors and refreshing are handled
// the same way everywhere, so no page can forget one.
import { useCallback, useEffect, useRef, useState } from './html.js';

/**
 * Loads `load(signal)` when `deps` change and on reload(). Answers
 * { data, error, loading, reload, setData }. A load started before the deps
 * changed can never overwrite a newer one.
 * @template T
 * @param {(signal: AbortSignal) => Promise<T>} load
 * @param {unknown[]} deps
 */
export function useLoad(load, deps) {
  const [state, setState] = useState({ data: undefined, error: null, loading: true });
  const [tick, setTick] = useState(0);
  const latest = useRef(0);
  useEffect(() => {
    const id = ++latest.current;
    const abort = new AbortController();
    setState((s) => ({ ...s, loading: true }));
    load(abort.signal).then(
      (data) => id === latest.current && setState({ data, error: null, loading: false }),
      (error) => id === latest.current && error?.name !== 'AbortError' && setState((s) => ({ ...s, error, loading: false })),
    );
    return () => abort.abort();
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((n) => n + 1), []);
  const setData = useCallback((fn) => setState((s) => ({ ...s, data: typeof fn === 'function' ? fn(s.data) : fn })), []);
  return { ...state, reload, setData };
}

/**
 * Calls `fn` every `ms` while the component is mounted (and `enabled`),
 * whatever it answers: a failed poll is retried at the next tick, never
 * stops the polling for good. The page is not polled while it is hidden.
 */
export function usePoll(fn, ms, deps, enabled = true) {
  const saved = useRef(fn);
  saved.current = fn;
  useEffect(() => {
    if (!enabled) return undefined;
    let stopped = false;
    let timer;
    const tick = async () => {
      if (!document.hidden) {
        try {
          await saved.current();
        } catch {
          // shown by the page's own error state; the next tick tries again
        }
      }
      if (!stopped) timer = setTimeout(tick, ms);
    };
    timer = setTimeout(tick, ms);
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [...deps, ms, enabled]);
}

/**
 * A user action (a button, a form): run(fn) marks it busy, catches its error
 * for display beside the control, and answers fn's value (undefined on error,
 * or when the action is already running).
 */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const mounted = useRef(true);
  // a second press while the first is under way does nothing (buttons stay focusable while busy, so they are not disabled)
  const inFlight = useRef(false);
  useEffect(() => () => (mounted.current = false), []);
  const run = useCallback(async (fn) => {
    if (inFlight.current) return undefined;
    inFlight.current = true;
    setBusy(true);
    setError(null);
    try {
      return await fn();
    } catch (err) {
      if (mounted.current) setError(err);
      return undefined;
    } finally {
      inFlight.current = false;
      if (mounted.current) setBusy(false);
    }
  }, []);
  return { busy, error, run, clear: () => setError(null) };
}

/**
 * A form's field setter: field(name) answers an input handler that writes
 * the input's value (a checkbox's `checked`) under `name`, then runs `after`
 * (for example clearing a "Saved." note). The update starts from the state
 * it follows, not from the render's copy: two events before a render (a
 * fast typist, a test) must not undo each other.
 * @param {(update: (values: Record<string, unknown>) => Record<string, unknown>) => void} setValues
 * @param {() => void} [after]
 */
export function fieldSetter(setValues, after) {
  return (name) => (e) => {
    const input = e.currentTarget;
    const value = input.type === 'checkbox' ? input.checked : input.value;
    setValues((v) => ({ ...v, [name]: value }));
    after?.();
  };
}
